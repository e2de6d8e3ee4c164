// The atlas in headless Chromium for benchmarks/atlas.py: time to the drawn map on a first and a
// repeated load, and frames per second while panning (mouse drag) and zooming (wheel).
// Input (argv[2], JSON): {url, nodeModules, chromium}; prints one JSON line.

import path from "node:path";
import { pathToFileURL } from "node:url";

const cfg = JSON.parse(process.argv[2]);
const { chromium } = await import(pathToFileURL(path.join(cfg.nodeModules, "playwright-core", "index.mjs")).href);
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];
const browser = await chromium.launch({ executablePath: cfg.chromium, headless: true, args: FLAGS });
const out = {};
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
  const ready = page.locator("#map[data-ready=true]");
  let started = Date.now();
  await page.goto(cfg.url);
  await ready.waitFor({ timeout: 120000 });
  out.first_page_s = (Date.now() - started) / 1000;
  out.drawn = Number(await page.locator("#map").getAttribute("data-count"));
  out.status = await page.locator("#status").textContent();
  if (!cfg.frames) throw new Error("done");
  started = Date.now();
  await page.reload();
  await ready.waitFor({ timeout: 120000 });
  out.repeat_page_s = (Date.now() - started) / 1000;

  const box = await page.locator("#map").boundingBox();
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  const frames = () => page.evaluate(() => [window.atlas.view.frames, window.atlas.view.lastDrawMs]);
  await page.mouse.move(cx, cy);
  await page.waitForTimeout(300);
  // Pan: a drag of 120 pointer moves; every move asks for a frame.
  let [before] = await frames();
  started = performance.now();
  await page.mouse.down();
  for (let i = 0; i < 120; i++) await page.mouse.move(cx + 200 * Math.sin(i / 12), cy + 120 * Math.cos(i / 12));
  await page.mouse.up();
  let elapsed = (performance.now() - started) / 1000;
  let [after, drawMs] = await frames();
  out.pan_fps = (after - before) / elapsed;
  out.pan_frames = after - before;
  out.pan_last_draw_ms = drawMs;
  // Zoom: 80 wheel steps in and out.
  [before] = await frames();
  started = performance.now();
  for (let i = 0; i < 80; i++) await page.mouse.wheel(0, i < 40 ? -60 : 60);
  await page.waitForTimeout(50);
  elapsed = (performance.now() - started) / 1000;
  [after, drawMs] = await frames();
  out.zoom_fps = (after - before) / elapsed;
  out.zoom_frames = after - before;
  // The drawing alone: 120 frames of programmatic pans, one per animation frame.
  out.draw_fps = await page.evaluate(async () => {
    const v = window.atlas.view;
    const n = 120;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      v.panBy(2, 1);
      await new Promise((resolve) => requestAnimationFrame(resolve)); // the view's frame runs first
    }
    return (n / (performance.now() - t0)) * 1000;
  });
  out.draw_ms = await page.evaluate(() => {
    const v = window.atlas.view;
    const times = [];
    for (let i = 0; i < 30; i++) {
      v.panBy(1, 0);
      v.draw();
      times.push(v.lastDrawMs);
    }
    times.sort((a, b) => a - b);
    return times[15];
  });
} catch (error) {
  if (error.message !== "done") out.failure = String(error && error.stack ? error.stack : error);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
