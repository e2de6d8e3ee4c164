// The atlas: wires the transport, the map, the lists, the filters and the memory panel.

import { byId, debounce, el, shorten, when } from "./util.js";
import { makeTransport, setTeamToken } from "./transport.js";
import { CAPTURED, MapData } from "./data.js";
import { MapView } from "./mapview.js";
import { Panel } from "./panel.js";

const LIST_LIMIT = 50;
const CAPTURES_LIMIT = 300;
const mode = document.querySelector('meta[name="atlas-transport"]').content;
const transport = makeTransport(mode);
const state = { data: null, hits: [], view: "map", selected: null, journeyFrom: null, journeySteps: null };

// ---- theme ---------------------------------------------------------------------------------

function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  byId("theme").textContent = theme === "dark" ? "Light" : "Dark";
  byId("theme").setAttribute("aria-label", theme === "dark" ? "Use the light theme" : "Use the dark theme");
  if (view) view.request();
}

function initialTheme() {
  const saved = mode === "app" ? null : localStorage.getItem("atlas-theme");
  if (saved === "light" || saved === "dark") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

let view = null;
setTheme(initialTheme());
byId("theme").addEventListener("click", () => {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  if (mode !== "app") localStorage.setItem("atlas-theme", next);
  setTheme(next);
});

// ---- the parts -----------------------------------------------------------------------------

function status(text) {
  byId("status").textContent = text;
}

const atlas = {
  transport,
  get journeyFrom() {
    return state.journeyFrom;
  },
  setJourneyFrom(id) {
    state.journeyFrom = id;
    status("Journey start set: open another memory and choose “Journey to here”, or shift-click it on the map.");
    panel.show();
  },
  open: (id) => open(id),
  journey: (a, b) => journey(a, b),
  changed,
};

view = new MapView(byId("map"), byId("canvas"), byId("tooltip"), {
  onPick(id, shift) {
    if (shift && state.selected && state.selected !== id) journey(state.selected, id);
    else open(id);
  },
});
const panel = new Panel(byId("panel"), byId("panel-body"), byId("forget-dialog"), atlas);
window.atlas = { view, state }; // for the benchmarks and tests: the view's frame counters

function open(id) {
  state.selected = id;
  view.setSelected([id]);
  markCurrent();
  panel.open(id);
}

async function journey(a, b) {
  status("Walking between the two memories…");
  try {
    const result = await transport.call("journey", { id: a, to: b });
    const ids = [a];
    for (const step of result.steps) {
      const near = step.nearby_memories[0];
      if (near && ids[ids.length - 1] !== near.id) ids.push(near.id);
    }
    if (ids[ids.length - 1] !== b) ids.push(b);
    state.journeySteps = result.steps;
    state.journeyFrom = null;
    view.setJourney(ids);
    view.setSelected([a, b]);
    status(`Journey: ${ids.length} memories on the path, coverage ${(result.path_coverage * 100).toFixed(0)} %.`);
    renderList("journey", result);
  } catch (error) {
    status(`Journey failed: ${error.message}`);
  }
}

function changed(kind, id, detail) {
  const data = state.data;
  if (!data) return;
  if (kind === "forget") {
    data.remove(id);
    state.hits = state.hits.filter((m) => m.id !== id);
    view.setHits(state.hits.filter((m) => !m.weak).map((m) => m.id));
    if (state.selected === id) state.selected = null;
    applyFilter();
  } else if (detail) {
    data.patch(detail);
    state.hits = state.hits.map((m) => (m.id === id ? { ...m, content: detail.content } : m));
    view.redraw();
    renderList();
  }
}

// ---- filters -------------------------------------------------------------------------------

const filterInputs = {
  namespace: byId("f-namespace"),
  type: byId("f-type"),
  tag: byId("f-tag"),
  session: byId("f-session"),
  from: byId("f-from"),
  to: byId("f-to"),
};

function filter() {
  const f = {};
  for (const [key, input] of Object.entries(filterInputs)) f[key] = input.value;
  return f;
}

function fillSelect(select, values) {
  const current = select.value;
  select.replaceChildren(el("option", { value: "" }, "all"), ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(current) ? current : "";
}

function fillFilters() {
  const d = state.data;
  fillSelect(filterInputs.namespace, d.values("namespace"));
  fillSelect(filterInputs.type, d.values("type"));
  fillSelect(filterInputs.session, d.values("session"));
  byId("tag-list").replaceChildren(...d.allTags().slice(0, 500).map((t) => el("option", { value: t })));
}

function applyFilter() {
  if (!state.data) return;
  state.visible = state.data.filtered(filter());
  view.setData(state.data, state.visible);
  renderLegend();
  renderList();
}

for (const input of Object.values(filterInputs)) input.addEventListener("input", debounce(applyFilter, 150));

// ---- lists ---------------------------------------------------------------------------------

function item(id, text, meta, mark) {
  const button = el("button", { type: "button", class: "item", onclick: () => open(id) }, mark ? el("span", { class: "hit-mark" }, "● ") : null, shorten(text, 220), meta ? el("span", { class: "meta", text: meta }) : null);
  return el("li", { "data-id": id }, button);
}

function markCurrent() {
  for (const li of byId("results").children) li.classList.toggle("current", li.dataset.id === state.selected);
}

function renderList(kind, payload) {
  const list = byId("results");
  const d = state.data;
  const title = byId("list-title");
  let items = [];
  if (kind === "journey") {
    title.textContent = "Journey between the two memories";
    items = payload.steps.map((s) => s.nearby_memories[0]).filter(Boolean).map((m, n) => item(m.id, m.content, `step ${n + 1} · similarity ${m.similarity.toFixed(2)}`));
  } else if (state.view === "captures") {
    const captured = state.visible.filter((i) => d.flags[i] & CAPTURED).sort((a, b) => d.created[b] - d.created[a]);
    title.textContent = `${captured.length} memories captured by hooks, by session, newest first`;
    const sessions = new Map();
    for (const i of captured.slice(0, CAPTURES_LIMIT)) {
      const key = d.session[i] || "(no session)";
      if (!sessions.has(key)) sessions.set(key, []);
      sessions.get(key).push(i);
    }
    for (const [session, members] of sessions) {
      items.push(el("li", { class: "session", role: "presentation" }, `Session ${session}`));
      for (const i of members) items.push(item(d.ids[i], d.label[i], `${when(d.created[i])} · ${d.namespace[i]}`));
    }
  } else if (state.hits.length) {
    // Weak hits (recall marks where relevance ends) are listed apart, after the others, and not highlighted.
    const strong = state.hits.filter((m) => !m.weak);
    const weak = state.hits.filter((m) => m.weak);
    title.textContent = strong.length
      ? `${strong.length} memories found (highlighted on the map)${weak.length ? `, ${weak.length} weak matches` : ""}`
      : `No relevant memories found: ${weak.length} weak matches`;
    items = strong.map((m) => item(m.id, m.content, `similarity ${m.similarity.toFixed(2)} · ${m.namespace}`, d && d.index.has(m.id)));
    if (weak.length) {
      items.push(el("li", { class: "session weak-heading", role: "presentation" }, "Weak matches, likely not relevant"));
      for (const m of weak) {
        const li = item(m.id, m.content, `similarity ${m.similarity.toFixed(2)} · weak · ${m.namespace}`);
        li.classList.add("weak");
        items.push(li);
      }
    }
  } else if (d) {
    const top = [...state.visible].sort((a, b) => d.importance[b] - d.importance[a]).slice(0, LIST_LIMIT);
    title.textContent = `Most important memories (${top.length} of ${state.visible.length})`;
    items = top.map((i) => item(d.ids[i], d.label[i], `${d.type[i] || "memory"} · importance ${d.importance[i].toFixed(2)}`));
  }
  list.replaceChildren(...items);
  markCurrent();
}

function renderLegend() {
  const d = state.data;
  const entries = [...d.regions].sort((a, b) => b.size - a.size).slice(0, 16).map((r) => el("span", {}, el("span", { class: "sw", style: `background:${r.color}` }), `${r.label} (${r.size})`));
  entries.push(
    el("span", {}, el("span", { class: "sw ring" }), "pinned"),
    el("span", {}, el("span", { class: "sw sq", style: "background:var(--fg2)" }), "captured by a hook"),
    el("span", {}, el("span", { class: "sw ghost" }), "superseded"),
    el("span", {}, el("span", { class: "sw", style: "background:none;border:2px solid var(--hit)" }), "search hit"),
    el("span", {}, "size = importance"),
  );
  byId("legend").replaceChildren(...entries);
}

// ---- search --------------------------------------------------------------------------------

let searchToken = 0;

async function search(query) {
  const mine = ++searchToken;
  if (!query.trim()) {
    state.hits = [];
    view.setHits([]);
    renderList();
    return;
  }
  status(`Searching for “${shorten(query, 60)}”…`);
  try {
    const result = await transport.call("recall", { query, limit: 20 });
    if (mine !== searchToken) return;
    showHits(result.memories);
    const strong = result.memories.filter((m) => !m.weak).length;
    status(strong ? `${strong} memories found.` : "No relevant memories found.");
  } catch (error) {
    status(`Search failed: ${error.message}`);
  }
}

function showHits(memories) {
  // Best first: recall lists the pinned memories ahead of its hits, whatever their similarity.
  state.hits = [...memories].sort((a, b) => b.similarity - a.similarity);
  view.setHits(memories.filter((m) => !m.weak).map((m) => m.id));
  if (state.view === "captures") setView("map");
  renderList();
}

// No form: a sandboxed host frame may not submit one, and the search never leaves the page.
byId("search").addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    search(byId("search").value);
  }
});
byId("search").addEventListener("input", debounce(() => search(byId("search").value), 400));

// ---- views ---------------------------------------------------------------------------------

function setView(name) {
  state.view = name;
  byId("view-map").setAttribute("aria-pressed", String(name === "map"));
  byId("view-captures").setAttribute("aria-pressed", String(name === "captures"));
  renderList();
}

byId("view-map").addEventListener("click", () => setView("map"));
byId("view-captures").addEventListener("click", () => setView("captures"));
byId("refresh").addEventListener("click", () => load(true));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !byId("forget-dialog").open && !byId("panel").hidden) {
    panel.close();
    state.selected = null;
    view.setSelected([]);
  }
  if (event.key === "/" && document.activeElement.tagName !== "INPUT" && document.activeElement.tagName !== "TEXTAREA") {
    event.preventDefault();
    byId("search").focus();
  }
});

// ---- loading -------------------------------------------------------------------------------

async function load(reload) {
  status("Loading the map…");
  const started = performance.now();
  try {
    const answer = await transport.call("map", { reload: Boolean(reload) });
    state.data = answer.visualize ? MapData.fromVisualize(answer.visualize) : MapData.fromAtlas(answer);
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    fillFilters();
    applyFilter();
    const how = answer.layout ? `, ${answer.layout}${answer.cached ? " (cached)" : ""}` : "";
    const n = state.data.regions.length;
    const regions = n ? `in ${n} region${n === 1 ? "" : "s"}` : "· no topic region yet (one forms when several memories share a topic)";
    status(`${state.data.count} memories ${regions} · map in ${seconds} s${how}`);
    byId("map").dataset.ready = "true";
    if (answer.visualize) await enrich();
  } catch (error) {
    if (error.status === 401 && mode === "team") return signIn();
    status(`The map could not be loaded: ${error.type || "Error"}: ${error.message}`);
  }
}

// Inside a host the map comes from visualize: fetch the rest (type, tags, dates, flags) by id.
async function enrich() {
  const d = state.data;
  try {
    d.details(await transport.details(d.ids));
    fillFilters();
    applyFilter();
  } catch (error) {
    status(`Some details could not be loaded: ${error.message}`);
  }
}

function signIn() {
  byId("signin").hidden = false;
  byId("signin-token").focus();
}

function signedIn() {
  setTeamToken(byId("signin-token").value.trim());
  byId("signin").hidden = true;
  load(false);
}

byId("signin-open").addEventListener("click", signedIn);
byId("signin-token").addEventListener("keydown", (event) => event.key === "Enter" && signedIn());

async function start() {
  if (mode === "app") {
    const given = new Promise((resolve) => {
      transport.onToolResult = resolve;
      setTimeout(resolve, 1500);
    });
    await transport.connect();
    if (transport.hostContext.theme) setTheme(transport.hostContext.theme);
    transport.onContext = (context) => context.theme && setTheme(context.theme);
    await given;
    await load(false);
    const hits = transport.givenHits();
    if (hits) showHits(hits.memories);
    transport.onToolResult = () => {
      const more = transport.givenHits();
      if (more) showHits(more.memories);
      else load(false);
    };
    return;
  }
  if (mode === "team" && !sessionStorage.getItem("atlas-team-token")) return signIn();
  await load(false);
}

start();
