// Drives `spatial-memory ui` in headless Chromium as a person would (tests/test_atlas_browser.py).
// Input (argv[2], JSON): {url, nodeModules, chromium, shots, edited, forget, pin}; prints one JSON
// line of what it saw and did. The store changes are checked afterwards through an MCP client.

import { pathToFileURL } from "node:url";
import path from "node:path";

const cfg = JSON.parse(process.argv[2]);
const { chromium } = await import(pathToFileURL(path.join(cfg.nodeModules, "playwright-core", "index.mjs")).href);
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];
const out = { errors: [] };
const browser = await chromium.launch({ executablePath: cfg.chromium, headless: true, args: FLAGS });
try {
  const context = await browser.newContext({ viewport: { width: 1360, height: 820 }, colorScheme: "light" });
  const page = await context.newPage();
  page.setDefaultTimeout(90000); // a shared, loaded CI host: waits are for the app, not a race
  page.on("pageerror", (e) => out.errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && out.errors.push(m.text()));
  await page.goto(cfg.url);
  const map = page.getByRole("application", { name: /map/i });
  await page.locator("#map[data-ready=true]").waitFor({ timeout: 60000 });
  out.dataCount = Number(await map.getAttribute("data-count"));
  out.status = await page.getByRole("status").first().textContent();

  // Search: hits listed and highlighted.
  const search = page.getByRole("searchbox", { name: "Search memories" });
  await search.fill(cfg.query);
  await search.press("Enter");
  const results = page.getByRole("list", { name: "Results" });
  await page.locator("#list-title", { hasText: "found" }).waitFor();
  out.hitTexts = await results.getByRole("listitem").allTextContents();
  out.weakTexts = await results.locator("li.weak").allTextContents();
  out.listTitle = await page.locator("#list-title").textContent();
  out.highlighted = await page.evaluate(() => window.atlas.view.hits.size);

  // A click on a listed hit opens the panel.
  await results.getByRole("listitem").first().getByRole("button").click();
  const panel = page.getByRole("region", { name: "Memory" });
  await panel.getByRole("button", { name: "Edit" }).waitFor();
  out.panelFromList = await panel.locator(".content").textContent();

  // A click on the map opens the memory under the pointer.
  async function clickOnMap(id) {
    const point = await page.evaluate((memoryId) => {
      const v = window.atlas.view;
      v.centreOn(memoryId);
      const i = v.data.index.get(memoryId);
      return { x: v.sx(v.data.x[i]), y: v.sy(v.data.y[i]) };
    }, id);
    await page.waitForTimeout(100);
    const box = await map.boundingBox();
    await page.mouse.click(box.x + point.x, box.y + point.y);
    await page.locator(`#panel[data-memory-id="${id}"]`).waitFor();
  }

  // Edit.
  await clickOnMap(cfg.edit);
  out.clickedOpened = await panel.getAttribute("data-memory-id");
  await panel.getByRole("button", { name: "Edit" }).click();
  await panel.getByLabel("Content").fill(cfg.newContent);
  await panel.getByLabel("Tags (comma separated)").fill("edited-in-atlas, cooking");
  await panel.getByRole("button", { name: "Save" }).click();
  await panel.getByText("Saved:").waitFor();
  out.afterEdit = await panel.locator(".content").textContent();

  // Pin.
  await clickOnMap(cfg.pin);
  await panel.getByRole("button", { name: "Pin", exact: true }).click();
  await panel.getByRole("button", { name: "Unpin" }).waitFor();

  // History and revert: back to the first version kept.
  await clickOnMap(cfg.revert);
  await panel.getByRole("button", { name: "History" }).click();
  const versions = panel.getByRole("list", { name: "Versions" });
  await versions.waitFor();
  out.versions = await versions.getByRole("listitem").count();
  out.diffInserted = await versions.locator("ins").count();
  out.diffDeleted = await versions.locator("del").count();
  await panel.getByRole("button", { name: `Revert to version ${cfg.revertTo}` }).click();
  await panel.getByText(`Reverted to version ${cfg.revertTo}`).waitFor();
  out.afterRevert = await panel.locator(".content").textContent();

  // A journey: open one memory, shift-click another.
  await clickOnMap(cfg.journey[0]);
  const point = await page.evaluate((memoryId) => {
    const v = window.atlas.view;
    v.centreOn(memoryId);
    const i = v.data.index.get(memoryId);
    return { x: v.sx(v.data.x[i]), y: v.sy(v.data.y[i]) };
  }, cfg.journey[1]);
  await page.waitForTimeout(100);
  const mapBox = await map.boundingBox();
  await page.keyboard.down("Shift");
  await page.mouse.click(mapBox.x + point.x, mapBox.y + point.y);
  await page.keyboard.up("Shift");
  await page.locator("#list-title", { hasText: "Journey" }).waitFor();
  out.journeyPath = await page.evaluate(() => window.atlas.view.journey);
  out.journeySteps = await results.getByRole("listitem").count();

  // Filters: one namespace, then all again.
  await page.getByLabel("Namespace").selectOption("work");
  await page.waitForTimeout(400);
  out.workCount = Number(await map.getAttribute("data-count"));
  await page.getByLabel("Namespace").selectOption("");
  await page.getByLabel("Type").selectOption("conversation");
  await page.waitForTimeout(400);
  out.conversationCount = Number(await map.getAttribute("data-count"));
  await page.getByLabel("Type").selectOption("");
  await page.waitForTimeout(400);

  // Keyboard: the map takes focus and zooms with +.
  await map.focus();
  const zoomBefore = await page.evaluate(() => window.atlas.view.k);
  await page.keyboard.press("+");
  out.keyboardZoom = (await page.evaluate(() => window.atlas.view.k)) / zoomBefore;

  // Forget, after the dialog.
  await clickOnMap(cfg.forget);
  await panel.getByRole("button", { name: "Forget" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  out.dialogText = await dialog.textContent();
  await dialog.getByRole("button", { name: "Forget" }).click();
  await panel.getByText("Forgotten.").waitFor();
  out.countAfterForget = Number(await map.getAttribute("data-count"));

  // The captures view lists what hooks stored.
  await page.getByRole("button", { name: "Captures" }).click();
  await page.locator("#list-title", { hasText: "captured by hooks" }).waitFor();
  out.capturesTitle = await page.locator("#list-title").textContent();

  // Screenshots, light and dark: a search's hits and an open memory.
  if (cfg.shots) {
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.reload();
      await page.locator("#map[data-ready=true]").waitFor({ timeout: 60000 });
      await search.fill(cfg.query);
      await search.press("Enter");
      await page.locator("#list-title", { hasText: "found" }).waitFor();
      await results.getByRole("listitem").first().getByRole("button").click();
      await panel.getByRole("button", { name: "Edit" }).waitFor();
      await page.waitForTimeout(300);
      await page.screenshot({ path: path.join(cfg.shots, `atlas-${scheme}.png`) });
      out[`theme_${scheme}`] = await page.evaluate(() => document.documentElement.dataset.theme);
    }
  }
} catch (error) {
  out.failure = String(error && error.stack ? error.stack : error);
  try {
    const pages = browser.contexts().flatMap((c) => c.pages());
    out.panelText = await pages[0].locator("#panel").textContent();
    if (cfg.shots) await pages[0].screenshot({ path: path.join(cfg.shots, "atlas-failure.png") });
  } catch (_) {
    // the browser itself failed
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
