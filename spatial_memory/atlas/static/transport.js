// How the page reaches the memory: the JSON operations of a web server (local page, team /ui),
// or, inside an MCP host, the server's tools through the host bridge (MCP Apps, SEP-1865).
// Both answer the same operations with the same shapes.

export class AtlasError extends Error {
  constructor(type, message, status) {
    super(message);
    this.type = type;
    this.status = status || 0;
  }
}

class HttpTransport {
  constructor(base, headers) {
    this.base = base;
    this.headers = headers;
    this.kind = "http";
  }

  async call(operation, args) {
    // The server's map follows the store's version by itself: a reload asks the same question.
    const { reload, ...body } = args || {};
    const response = await fetch(this.base + operation, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...this.headers() },
      body: JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const type = (data && data.error) || (response.status === 401 ? "Unauthorized" : "HTTPError");
      const message = (data && data.message) || `the server answered ${response.status}`;
      throw new AtlasError(type, message, response.status);
    }
    return data;
  }
}

const PROTOCOL_VERSION = "2026-01-26";
const BATCH = 100;

function unwrap(result) {
  if (!result) throw new AtlasError("InternalError", "empty tool result");
  if (result.isError) {
    let body = null;
    try {
      body = JSON.parse(result.content[0].text);
    } catch (_) {
      body = null;
    }
    throw new AtlasError((body && body.error) || "ToolError", (body && body.message) || "the tool failed");
  }
  if (result.structuredContent) return result.structuredContent;
  const text = (result.content || []).find((block) => block.type === "text");
  return text ? JSON.parse(text.text) : {};
}

class BridgeTransport {
  constructor() {
    this.kind = "bridge";
    this.pending = new Map();
    this.next = 1;
    this.toolResult = null; // the last result the host handed in (visualize or recall)
    this.toolArguments = null;
    this.hostContext = {};
    this.onToolResult = null;
    this.onContext = null;
    window.addEventListener("message", (event) => this.receive(event));
  }

  post(message) {
    window.parent.postMessage(message, "*");
  }

  request(method, params) {
    const id = this.next++;
    this.post({ jsonrpc: "2.0", id, method, params });
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  receive(event) {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if (message.error) waiting.reject(new AtlasError("HostError", message.error.message || "host error"));
      else waiting.resolve(message.result);
      return;
    }
    if (message.id !== undefined) {
      // A request from the host: ping and teardown need only an answer.
      const known = message.method === "ping" || message.method === "ui/resource-teardown";
      this.post(
        known
          ? { jsonrpc: "2.0", id: message.id, result: {} }
          : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } },
      );
      return;
    }
    const params = message.params || {};
    if (message.method === "ui/notifications/tool-result") {
      this.toolResult = params;
      if (this.onToolResult) this.onToolResult(params);
    } else if (message.method === "ui/notifications/tool-input") {
      this.toolArguments = params.arguments || {};
    } else if (message.method === "ui/notifications/host-context-changed") {
      this.hostContext = { ...this.hostContext, ...params };
      if (this.onContext) this.onContext(this.hostContext);
    }
  }

  async connect() {
    const answer = await this.request("ui/initialize", {
      appInfo: { name: "spatial-memory-atlas", version: "1.0.0" },
      appCapabilities: {},
      protocolVersion: PROTOCOL_VERSION,
    });
    this.hostContext = (answer && answer.hostContext) || {};
    this.post({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
  }

  async tool(name, args) {
    return unwrap(await this.request("tools/call", { name, arguments: args }));
  }

  // A visualize result handed in by the host, if that is what opened the app.
  givenMap() {
    const data = this.toolResult && !this.toolResult.isError ? unwrap(this.toolResult) : null;
    return data && Array.isArray(data.nodes) ? data : null;
  }

  // A recall result handed in by the host: its hits are highlighted.
  givenHits() {
    const data = this.toolResult && !this.toolResult.isError ? unwrap(this.toolResult) : null;
    return data && Array.isArray(data.memories) ? data : null;
  }

  async details(ids) {
    const found = [];
    for (let start = 0; start < ids.length; start += BATCH) {
      const part = await this.tool("get_memories", { memory_ids: ids.slice(start, start + BATCH) });
      found.push(...part.memories);
    }
    return found;
  }

  async call(operation, args) {
    switch (operation) {
      case "map": {
        const given = this.givenMap();
        if (given && !args.reload) return { visualize: given };
        const hits = this.givenHits();
        const request = { format: "json", include_edges: false, max_memories: 2000 };
        const strong = hits ? hits.memories.filter((m) => !m.weak) : [];
        if (strong.length) request.highlight_ids = strong.map((m) => m.id);
        return { visualize: await this.tool("visualize", request) };
      }
      case "recall":
        return this.tool("recall", { query: args.query, limit: args.limit || 20 });
      case "memory": {
        const found = await this.tool("get_memories", { memory_ids: [args.id] });
        const memory = found.memories[0] || null;
        const near = memory && memory.current ? await this.tool("nearby", { memory_id: args.id, limit: 6 }) : null;
        return { memory, neighbours: near ? near.neighbors : [] };
      }
      case "update": {
        const { id, ...changes } = args;
        return this.tool("update_memory", { memory_id: id, ...changes });
      }
      case "forget":
        return this.tool("forget", { memory_id: args.id });
      case "history":
        return this.tool("memory_history", { memory_id: args.id, diff: true, limit: 100 });
      case "revert":
        return this.tool("update_memory", { memory_id: args.id, revert_to: args.version });
      case "journey":
        return this.tool("journey", { start_id: args.id, end_id: args.to, steps: 8, neighbors_per_step: 1 });
      default:
        throw new AtlasError("ValidationError", `unknown operation ${operation}`);
    }
  }
}

function teamToken() {
  return sessionStorage.getItem("atlas-team-token") || "";
}

export function makeTransport(mode) {
  if (mode === "app") return new BridgeTransport();
  if (mode === "team") {
    return new HttpTransport(new URL("ui/api/", location.origin + "/").href, () => ({
      Authorization: `Bearer ${teamToken()}`,
    }));
  }
  const token = new URLSearchParams(location.search).get("token") || "";
  return new HttpTransport(new URL("api/", location.href).href, () => ({ "X-Atlas-Token": token }));
}

export function setTeamToken(token) {
  sessionStorage.setItem("atlas-team-token", token);
}
