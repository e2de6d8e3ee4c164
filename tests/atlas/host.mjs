// An MCP Apps host, as far as the atlas sees one (tests/test_atlas_browser.py): the TypeScript SDK
// client connected to the real server over stdio, and a page in headless Chromium that renders
// the server's ui:// resource in a sandboxed iframe through @modelcontextprotocol/ext-apps's
// AppBridge, hands it a real visualize result and proxies its tools/call to the server.
// Input (argv[2], JSON): {nodeModules, chromium, python, env, shot, pin, query}; prints one JSON line.

import http from "node:http";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

const cfg = JSON.parse(process.argv[2]);
const NM = cfg.nodeModules;
const load = (p) => import(pathToFileURL(path.join(NM, p)).href);
const { Client } = await load("@modelcontextprotocol/sdk/dist/esm/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/dist/esm/client/stdio.js");
const { chromium } = await load("playwright-core/index.mjs");
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];
const out = { errors: [] };

const client = new Client({ name: "atlas-test-host", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({ command: cfg.python, args: ["-m", "spatial_memory"], env: cfg.env, stderr: "inherit" }),
);

// The page's modules straight from node_modules, bare names through an import map.
const IMPORTS = {
  "@modelcontextprotocol/ext-apps/app-bridge": "/nm/@modelcontextprotocol/ext-apps/dist/src/app-bridge.js",
  "@modelcontextprotocol/sdk/": "/nm/@modelcontextprotocol/sdk/dist/esm/",
  zod: "/nm/zod/index.js",
  "zod/v3": "/nm/zod/v3/index.js",
  "zod/v4": "/nm/zod/v4/index.js",
  "zod/v4-mini": "/nm/zod/v4-mini/index.js",
  "zod-to-json-schema": "/nm/zod-to-json-schema/dist/esm/index.js",
};
const HOST_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>test host</title>
<script type="importmap">${JSON.stringify({ imports: IMPORTS })}</script></head>
<body style="margin:0"><script type="module">
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
const { html, input, result, theme } = await window.hostData();
const iframe = document.createElement("iframe");
iframe.setAttribute("sandbox", "allow-scripts");
iframe.setAttribute("title", "Memory atlas app");
iframe.style.cssText = "width:1360px;height:820px;border:0;display:block";
document.body.append(iframe);
const bridge = new AppBridge(null, { name: "atlas-test-host", version: "1.0.0" }, { serverTools: {}, openLinks: {} }, { hostContext: { theme } });
bridge.oncalltool = async (params) => window.proxyToolCall(params);
bridge.oninitialized = async () => {
  await bridge.sendToolInput({ arguments: input });
  await bridge.sendToolResult(result);
  window.appInitialized = true;
};
await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
window.bridge = bridge;
iframe.srcdoc = html;
</script></body></html>`;

const server = http.createServer(async (request, response) => {
  const url = new URL(request.url, "http://127.0.0.1");
  if (url.pathname === "/") {
    response.writeHead(200, { "content-type": "text/html" }).end(HOST_PAGE);
    return;
  }
  const file = path.normalize(path.join(NM, decodeURIComponent(url.pathname.replace(/^\/nm\//, ""))));
  if (!url.pathname.startsWith("/nm/") || !file.startsWith(NM)) return response.writeHead(404).end();
  try {
    response.writeHead(200, { "content-type": "text/javascript" }).end(await readFile(file));
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const hostUrl = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({ executablePath: cfg.chromium, headless: true, args: FLAGS });
try {
  const tools = (await client.listTools()).tools;
  const meta = (name) => tools.find((t) => t.name === name)._meta;
  out.visualizeMeta = meta("visualize");
  out.recallMeta = meta("recall");
  const uri = out.visualizeMeta.ui.resourceUri;
  const resource = (await client.readResource({ uri })).contents[0];
  out.resourceMime = resource.mimeType;
  const input = { format: "json", include_edges: false };
  const visualized = await client.callTool({ name: "visualize", arguments: input });
  out.nodeCount = visualized.structuredContent.node_count;
  out.calls = [];

  for (const theme of ["light", "dark"]) {
    const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
    page.setDefaultTimeout(90000); // a shared, loaded CI host: waits are for the app, not a race
    page.on("pageerror", (e) => out.errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && out.errors.push(m.text()));
    await page.exposeFunction("hostData", () => ({ html: resource.text, input, result: visualized, theme }));
    await page.exposeFunction("proxyToolCall", async (params) => {
      out.calls.push(params.name);
      return client.callTool(params);
    });
    await page.goto(hostUrl);
    const app = page.frameLocator("iframe");
    const map = app.getByRole("application", { name: /map/i });
    await app.locator("#map[data-ready=true]").waitFor({ timeout: 60000 });
    out[`dataCount_${theme}`] = Number(await map.getAttribute("data-count"));
    out[`theme_${theme}`] = await app.locator("html").getAttribute("data-theme");
    if (theme === "dark") {
      if (cfg.shot) await page.screenshot({ path: cfg.shot });
      await page.close();
      continue;
    }
    // Details come through get_memories (type, tags, flags): the type filter then has values.
    await app.locator("#f-type option[value=fact]").waitFor({ state: "attached", timeout: 60000 });

    // Search through the bridge: recall, hits listed and highlighted.
    await app.getByRole("searchbox", { name: "Search memories" }).fill(cfg.query);
    await app.getByRole("searchbox", { name: "Search memories" }).press("Enter");
    const results = app.getByRole("list", { name: "Results" });
    await app.locator("#list-title", { hasText: "found" }).waitFor();
    out.hits = await results.getByRole("listitem").count();
    out.weak = await results.locator("li.weak").count();
    const frame = page.frames().find((f) => f !== page.mainFrame());
    out.highlighted = await frame.evaluate(() => window.atlas.view.hits.size);

    // Pin a memory from its panel: update_memory through the host, checked through the client.
    const ids = visualized.structuredContent.nodes.map((n) => n.id);
    await frame.evaluate((id) => {
      const v = window.atlas.view;
      v.centreOn(id);
    }, cfg.pin);
    await page.waitForTimeout(100);
    const point = await frame.evaluate((id) => {
      const v = window.atlas.view;
      const i = v.data.index.get(id);
      return { x: v.sx(v.data.x[i]), y: v.sy(v.data.y[i]) };
    }, cfg.pin);
    const box = await map.boundingBox();
    await page.mouse.click(box.x + point.x, box.y + point.y);
    const panel = app.getByRole("region", { name: "Memory" });
    await app.locator(`#panel[data-memory-id="${cfg.pin}"]`).waitFor();
    await panel.getByRole("button", { name: "Pin", exact: true }).click();
    await panel.getByRole("button", { name: "Unpin" }).waitFor();
    const stored = await client.callTool({ name: "get_memories", arguments: { memory_ids: [cfg.pin] } });
    out.pinnedInStore = stored.structuredContent.memories[0].pinned;
    out.pinWasOnMap = ids.includes(cfg.pin);

    // The host hands in a recall result: its hits are listed and highlighted.
    const recalled = await client.callTool({ name: "recall", arguments: { query: "running plan knee", limit: 5 } });
    await page.evaluate((r) => window.bridge.sendToolResult(r), recalled);
    await app.locator("#list-title", { hasText: "found" }).waitFor();
    await page.waitForFunction(
      (n) => {
        const f = document.querySelector("iframe");
        return f && n >= 0;
      },
      recalled.structuredContent.memories.length,
    );
    out.recallHits = recalled.structuredContent.memories.filter((m) => !m.weak).map((m) => m.id);
    out.highlightedAfterRecall = await frame.evaluate(() => [...window.atlas.view.hits]);
    await page.close();
  }
} catch (error) {
  out.failure = String(error && error.stack ? error.stack : error);
} finally {
  await browser.close();
  server.close();
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
