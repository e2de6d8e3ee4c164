// The map's memories in columns (one array per attribute): 10,000 points without 10,000 objects.

export const PINNED = 1;
export const CAPTURED = 2;
export const REVISED = 4;
const NOISE_COLOR = "#9aa5b1";

function seconds(iso) {
  const t = Date.parse(iso || "");
  return Number.isNaN(t) ? 0 : Math.floor(t / 1000);
}

function flagsOf(memory) {
  const via = memory.provenance ? memory.provenance.via : null;
  const captured = via === "hook" || (memory.metadata && memory.metadata.captured_by === "hook");
  return (memory.pinned ? PINNED : 0) | (captured ? CAPTURED : 0) | ((memory.version || 1) > 1 ? REVISED : 0);
}

export class MapData {
  constructor(columns, regions, superseded) {
    Object.assign(this, columns);
    this.regions = regions;
    this.superseded = superseded;
    this.colors = new Map(regions.map((r) => [r.id, r.color]));
    this.reindex();
  }

  reindex() {
    this.index = new Map(this.ids.map((id, i) => [id, i]));
  }

  get count() {
    return this.ids.length;
  }

  color(i) {
    return this.colors.get(this.region[i]) || NOISE_COLOR;
  }

  // The server's atlas map (HTTP transports): every attribute present.
  static fromAtlas(a) {
    const columns = {
      ids: a.ids,
      x: a.x,
      y: a.y,
      importance: a.importance,
      region: a.region,
      flags: a.flags,
      label: a.label,
      namespace: a.namespace.map((k) => a.namespaces[k]),
      type: a.memory_type.map((k) => a.memory_types[k]),
      session: a.session.map((k) => (k < 0 ? "" : a.sessions[k])),
      tags: a.tags,
      created: a.created,
    };
    return new MapData(columns, a.regions, a.superseded || []);
  }

  // A visualize result (inside an MCP host): positions and regions; the rest comes from details().
  static fromVisualize(v) {
    const nodes = v.nodes || [];
    const columns = {
      ids: nodes.map((n) => n.id),
      x: nodes.map((n) => n.x),
      y: nodes.map((n) => n.y),
      importance: nodes.map((n) => n.importance),
      region: nodes.map((n) => n.cluster),
      flags: nodes.map(() => 0),
      label: nodes.map((n) => n.label),
      namespace: nodes.map(() => ""),
      type: nodes.map(() => ""),
      session: nodes.map(() => ""),
      tags: nodes.map(() => []),
      created: nodes.map(() => 0),
    };
    const regions = (v.clusters || []).map((c) => ({
      id: c.id, label: c.label, color: c.color, size: c.size, x: c.center_x, y: c.center_y,
    }));
    const data = new MapData(columns, regions, []);
    data.given = nodes.filter((n) => n.highlighted).map((n) => n.id);
    return data;
  }

  // Whole memories (get_memories' shape) filling in what a visualize result lacks.
  details(memories) {
    for (const m of memories) this.patch(m);
  }

  patch(memory) {
    const i = this.index.get(memory.id);
    if (i === undefined) return;
    this.flags[i] = flagsOf(memory);
    this.namespace[i] = memory.namespace;
    this.type[i] = memory.memory_type;
    this.session[i] = memory.session_id || "";
    this.tags[i] = memory.tags || [];
    this.created[i] = seconds(memory.created_at);
    this.importance[i] = memory.importance;
    this.label[i] = memory.content.length > 80 ? memory.content.slice(0, 79) + "…" : memory.content;
  }

  remove(id) {
    const i = this.index.get(id);
    if (i === undefined) return;
    for (const key of ["ids", "x", "y", "importance", "region", "flags", "label", "namespace", "type", "session", "tags", "created"]) {
      this[key].splice(i, 1);
    }
    this.superseded = this.superseded.filter((s) => s.successor !== id);
    this.reindex();
  }

  values(column) {
    return [...new Set(this[column].filter((v) => v !== ""))].sort();
  }

  allTags() {
    const tags = new Set();
    for (const list of this.tags) for (const t of list) tags.add(t);
    return [...tags].sort();
  }

  // Indices of the memories the filter keeps.
  filtered(filter) {
    const keep = [];
    const from = filter.from ? Date.parse(filter.from) / 1000 : null;
    const to = filter.to ? Date.parse(filter.to) / 1000 + 86400 : null;
    const tag = (filter.tag || "").trim().toLowerCase();
    for (let i = 0; i < this.ids.length; i++) {
      if (filter.namespace && this.namespace[i] !== filter.namespace) continue;
      if (filter.type && this.type[i] !== filter.type) continue;
      if (filter.session && this.session[i] !== filter.session) continue;
      if (tag && !this.tags[i].some((t) => t.toLowerCase() === tag)) continue;
      if (from !== null && this.created[i] && this.created[i] < from) continue;
      if (to !== null && this.created[i] && this.created[i] >= to) continue;
      keep.push(i);
    }
    return keep;
  }
}
