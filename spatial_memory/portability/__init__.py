"""portability"""
