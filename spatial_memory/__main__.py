from spatial_memory.cli import main  # absolute: the bundle host runs this file as a script

main()
