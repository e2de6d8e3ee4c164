// Drives an MCP server with the official TypeScript SDK client, the way Claude Desktop, Claude Code
// and the MCP Inspector do, for tests/test_interop_typescript.py and tests/test_team_server.py: a
// stdio server it starts, or an HTTP server already running (streamable HTTP, bearer token).
//
//   node driver.mjs scenario.json     run a whole scenario, print one JSON line per step
//   node driver.mjs < lines           the first stdin line is the header, every later line a step;
//                                     each answer line is printed as soon as the step finishes
//
// Header / scenario: {"server": {"command", "args", "env", "cwd"}, "timeoutMs"?, "steps"?: [...]}.
// The server's stderr goes to this process's stderr. With {"server": {"url", "headers"?}} the client
// connects to that URL with the SDK's StreamableHTTPClientTransport, sending the headers (an
// Authorization bearer token) with every request.
//
// Steps:
//   {"call": "<tool>", "arguments": {...}, "progress"?: true, "timeoutMs"?: n}
//        client.callTool with the SDK's own output-schema validation; with "progress", an
//        onprogress handler (so the request carries a progressToken) records every notification
//   {"list": "tools" | "resources" | "resourceTemplates" | "prompts"}   every page
//   {"read": "<uri>"}                        client.readResource
//   {"prompt": "<name>", "arguments": {...}}  client.getPrompt
//   {"complete": {"ref", "argument", "context"?}}  client.complete (completion/complete)
//   {"ping": true}
//   {"subscribe": "<uri>"}  resources/subscribe (2025 era); {"listen": ["<uri>", ...]} subscriptions/listen (2026)
//   {"updates": true, "waitMs"?: n}  the resource URIs updated so far (after waiting), then forgets them
//   {"listen": [...], "resourcesListChanged": true}  the listen stream also asks for resources/list_changed
//   {"listChanged": true, "waitMs"?: n}  how many notifications/resources/list_changed arrived so far,
//                                      waiting up to waitMs for the first one; then forgets them
//   {"skills": "list"}                 (header "sdk": "2") the 2.x SkillsClient's list(): the valid
//                                      entries, refused ones, ttlMs, cacheScope
//   {"skills": "get", "uri": "..."}    SkillsClient.get(uri)
//   {"skills": "read", "uri": "...", "entry"?: {...}}  SkillsClient.get(uri), then read(entry): size,
//                                      digest and frontmatter verified (a given "entry" is read
//                                      instead: a tampered one must fail); its bytes as byteLength
//
// Header "elicitation": "accept" | "decline" declares form elicitation and answers every question so
// (accepting with {"confirm": true}); the questions asked are in the next call step's "elicited".
//
// References to earlier steps (0-based, in step order): a string that is exactly "$N.path" is
// replaced by that value (any JSON type), and "{{N.path}}" inside a string by its text. The path
// (dot-separated, numbers index arrays) is looked up in step N's structuredContent for a tool
// call, in its result otherwise; "$0.id" is the id a remember at step 0 returned. A string that
// starts with "$$" stands for itself minus the first "$".
//
// Output: first {"connected": true, "serverInfo", "capabilities", "instructions", "tools"}
// (tools/list is always called first, as real clients do: it is what arms the client's
// output-schema validators), then per step {"index", "step", "ok": true, "result", ...} or
// {"index", "step", "ok": false, "error": {"name", "message", "code", "data"}}. A failure to
// connect prints {"fatal": ...} and exits 1.

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

// The client SDK: 1.x (`@modelcontextprotocol/sdk`, the default) or, with "sdk": "2" in the
// header, 2.x (`@modelcontextprotocol/client`), whose "mode" can be "auto" or a pinned
// "2026-07-28" (its versionNegotiation; absent: the 2025 handshake, its default).
async function loadSdk(version) {
  if (version === "2") {
    const core = await import("@modelcontextprotocol/client");
    const stdio = await import("@modelcontextprotocol/client/stdio");
    const skills = await import("@modelcontextprotocol/client/ext/skills");
    return {
      SkillsClient: skills.SkillsClient,
      Client: core.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      StreamableHTTPClientTransport: core.StreamableHTTPClientTransport,
      callTool: (client, params, options) => client.callTool(params, options),
      onElicit: (client, handler) => client.setRequestHandler("elicitation/create", handler),
      onUpdated: (client, handler) => client.setNotificationHandler("notifications/resources/updated", handler),
      onListChanged: (client, handler) =>
        client.setNotificationHandler("notifications/resources/list_changed", handler),
      outputValidated: () => null, // 2.x keeps its validators private
    };
  }
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const types = await import("@modelcontextprotocol/sdk/types.js");
  return {
    Client,
    StdioClientTransport,
    StreamableHTTPClientTransport,
    callTool: (client, params, options) => client.callTool(params, undefined, options),
    onElicit: (client, handler) => client.setRequestHandler(types.ElicitRequestSchema, handler),
    onUpdated: (client, handler) => client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, handler),
    onListChanged: (client, handler) =>
      client.setNotificationHandler(types.ResourceListChangedNotificationSchema, handler),
    outputValidated: (client, name) => Boolean(client.getToolOutputValidator(name)),
  };
}

const DEFAULT_TIMEOUT_MS = 300_000;
// stdout is this driver's answer lines: the SDK's debug messages (SkillsClient's among them) go to stderr.
console.debug = (...items) => console.error(...items);

function emit(object) {
  process.stdout.write(JSON.stringify(object) + "\n");
}

function describeError(error) {
  if (error instanceof Error) {
    return {
      name: error.name,
      message: error.message,
      code: error.code ?? null,
      data: error.data ?? null,
    };
  }
  return { name: typeof error, message: String(error), code: null, data: null };
}

class UnresolvedReference extends Error {
  constructor(message) {
    super(message);
    this.name = "UnresolvedReference";
  }
}

function lookup(outputs, reference) {
  const [head, ...path] = reference.split(".");
  const index = Number(head);
  const output = outputs[index];
  if (!Number.isInteger(index) || output === undefined) {
    throw new UnresolvedReference(`reference ${reference}: no step ${head} before this one`);
  }
  if (!output.ok) {
    throw new UnresolvedReference(`reference ${reference}: step ${head} failed`);
  }
  let value = output.result?.structuredContent ?? output.result;
  for (const key of path) {
    if (value === null || typeof value !== "object" || !(key in value)) {
      throw new UnresolvedReference(`reference ${reference}: no ${key} in step ${head}'s result`);
    }
    value = value[key];
  }
  return value;
}

function substitute(value, outputs) {
  if (typeof value === "string") {
    if (value.startsWith("$$")) return value.slice(1); // "$$5.00" is the literal "$5.00"
    const whole = /^\$(\d+(?:\.[^.]+)*)$/.exec(value);
    if (whole) return lookup(outputs, whole[1]);
    return value.replace(/\{\{(\d+(?:\.[^.}]+)*)\}\}/g, (_, reference) => {
      const found = lookup(outputs, reference);
      return typeof found === "string" ? found : JSON.stringify(found);
    });
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, outputs));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, outputs)]));
  }
  return value;
}

async function allPages(fetchPage, key) {
  const items = [];
  let cursor;
  let pages = 0;
  do {
    const page = await fetchPage(cursor === undefined ? undefined : { cursor });
    items.push(...page[key]);
    cursor = page.nextCursor;
    pages += 1;
  } while (cursor !== undefined && pages < 100);
  return { [key]: items, pages };
}

function bytesAsSize(file) {
  // Uint8Array does not survive JSON: report its length and drop it.
  const { bytes, ...rest } = file;
  return { ...rest, byteLength: bytes.byteLength };
}

async function runSkillsStep(skills, resolved, options) {
  if (skills === undefined) throw new Error('skills steps need the header "sdk": "2"');
  if (resolved.skills === "list") return await skills.list({}, options);
  if (resolved.skills === "get") return await skills.get(resolved.uri, options);
  if (resolved.skills === "read") {
    const entry = resolved.entry ?? (await skills.get(resolved.uri, options)).skill;
    return bytesAsSize(await skills.read(entry, undefined, options));
  }
  throw new Error(`unknown skills step ${resolved.skills}`);
}

async function runStep(session, step, outputs, defaultTimeout) {
  const { client, sdk } = session;
  const resolved = substitute(step, outputs);
  const timeout = resolved.timeoutMs ?? defaultTimeout;
  const options = { timeout, maxTotalTimeout: timeout };
  const extra = {};
  let result;
  if (resolved.skills !== undefined) {
    result = await runSkillsStep(session.skills, resolved, options);
  } else if (resolved.call !== undefined) {
    const progress = [];
    if (resolved.progress) {
      options.onprogress = (notification) => progress.push(notification);
      extra.progress = progress;
    }
    // The SDK's own validation against the tool's outputSchema happens inside callTool.
    extra.outputSchemaValidated = sdk.outputValidated(client, resolved.call);
    session.elicited.length = 0;
    result = await sdk.callTool(client, { name: resolved.call, arguments: resolved.arguments ?? {} }, options);
    extra.elicited = [...session.elicited];
  } else if (resolved.list !== undefined) {
    const kinds = {
      tools: [(p) => client.listTools(p, options), "tools"],
      resources: [(p) => client.listResources(p, options), "resources"],
      resourceTemplates: [(p) => client.listResourceTemplates(p, options), "resourceTemplates"],
      prompts: [(p) => client.listPrompts(p, options), "prompts"],
    };
    const kind = kinds[resolved.list];
    if (kind === undefined) throw new Error(`unknown list kind ${resolved.list}`);
    result = await allPages(...kind);
  } else if (resolved.read !== undefined) {
    result = await client.readResource({ uri: resolved.read }, options);
  } else if (resolved.prompt !== undefined) {
    result = await client.getPrompt({ name: resolved.prompt, arguments: resolved.arguments ?? {} }, options);
  } else if (resolved.complete !== undefined) {
    result = await client.complete(resolved.complete, options);
  } else if (resolved.ping !== undefined) {
    result = await client.ping(options);
  } else if (resolved.subscribe !== undefined) {
    result = await client.subscribeResource({ uri: resolved.subscribe }, options);
  } else if (resolved.listen !== undefined) {
    const filter = { resourceSubscriptions: resolved.listen };
    if (resolved.resourcesListChanged) filter.resourcesListChanged = true;
    session.subscriptions.push(await client.listen(filter, options));
    result = {};
  } else if (resolved.listChanged !== undefined) {
    const until = Date.now() + (resolved.waitMs ?? 0);
    while (session.listChanged === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    result = { count: session.listChanged };
    session.listChanged = 0;
  } else if (resolved.updates !== undefined) {
    await new Promise((resolve) => setTimeout(resolve, resolved.waitMs ?? 0));
    result = { uris: session.updated.splice(0) };
  } else {
    throw new Error(`unknown step ${JSON.stringify(step)}`);
  }
  return { result, ...extra };
}

async function connect(header) {
  const server = header.server;
  const sdk = await loadSdk(header.sdk ?? "1");
  const transport = server.url
    ? new sdk.StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers ?? {} } })
    : new sdk.StdioClientTransport({
        command: server.command,
        args: server.args ?? [],
        env: server.env,
        cwd: server.cwd,
        stderr: "inherit",
      });
  const capabilities = header.elicitation ? { elicitation: { form: {} } } : {};
  const options = { capabilities };
  if (header.mode === "auto") options.versionNegotiation = { mode: "auto" };
  else if (header.mode) options.versionNegotiation = { mode: { pin: header.mode } };
  const client = new sdk.Client({ name: "spatial-memory-interop-test", version: "1.0.0" }, options);
  const session = { client, sdk, elicited: [], updated: [], subscriptions: [], listChanged: 0 };
  if (sdk.SkillsClient) session.skills = new sdk.SkillsClient(client);
  if (header.elicitation) {
    sdk.onElicit(client, async (request) => {
      session.elicited.push(request.params.message);
      return header.elicitation === "accept" ? { action: "accept", content: { confirm: true } } : { action: "decline" };
    });
  }
  sdk.onUpdated(client, async (notification) => {
    session.updated.push(notification.params.uri);
  });
  sdk.onListChanged(client, async () => {
    session.listChanged += 1;
  });
  await client.connect(transport, { timeout: header.timeoutMs ?? DEFAULT_TIMEOUT_MS });
  const tools = await allPages((p) => client.listTools(p), "tools");
  emit({
    connected: true,
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions() ?? null,
    protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null,
    skillsSupported: session.skills?.supported ?? null,
    tools,
  });
  return session;
}

async function* stepsFrom(header, lines) {
  if (header.steps) {
    yield* header.steps;
    return;
  }
  while (true) {
    const { value, done } = await lines.next();
    if (done) return;
    if (value.trim()) yield JSON.parse(value);
  }
}

async function exit(code) {
  // Let stdout drain first: writes to a pipe are asynchronous on some platforms.
  await new Promise((resolve) => process.stdout.write("", resolve));
  process.exit(code);
}

async function main() {
  let header;
  let lines;
  if (process.argv[2]) {
    header = JSON.parse(readFileSync(process.argv[2], "utf8"));
  } else {
    lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
    const first = await lines.next();
    if (first.done) throw new Error("no header line on stdin");
    header = JSON.parse(first.value);
  }
  const defaultTimeout = header.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let session;
  try {
    session = await connect(header);
  } catch (error) {
    emit({ fatal: describeError(error) });
    await exit(1);
  }
  const outputs = [];
  let index = 0;
  for await (const step of stepsFrom(header, lines)) {
    let output;
    try {
      output = { index, step, ok: true, ...(await runStep(session, step, outputs, defaultTimeout)) };
    } catch (error) {
      output = { index, step, ok: false, error: describeError(error) };
    }
    outputs.push(output);
    emit(output);
    index += 1;
  }
  for (const subscription of session.subscriptions) await subscription.close?.();
  await session.client.close();
  await exit(0);
}

main().catch(async (error) => {
  emit({ fatal: describeError(error) });
  await exit(1);
});
