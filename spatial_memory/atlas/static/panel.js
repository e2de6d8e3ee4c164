// The memory panel: a memory whole (content, fields, provenance, relations, neighbours), and what
// a person can do with it: edit, pin or unpin, forget (after a dialog), history with diffs and revert.

import { el, shorten, when } from "./util.js";

const TYPES = ["fact", "conversation", "context"];

export class Panel {
  // atlas: { transport, changed(kind, id, memory), open(id), journeyFrom, setJourneyFrom(id), journey(a, b) }
  constructor(section, body, dialog, atlas) {
    this.section = section;
    this.body = body;
    this.dialog = dialog;
    this.atlas = atlas;
    this.memory = null;
    this.neighbours = [];
  }

  close() {
    this.section.hidden = true;
    this.memory = null;
  }

  async open(id) {
    this.section.hidden = false;
    this.body.replaceChildren(el("p", { text: "Loading…" }));
    try {
      const found = await this.atlas.transport.call("memory", { id });
      if (!found.memory) {
        this.body.replaceChildren(el("p", { class: "error", text: "This memory no longer exists." }));
        return;
      }
      this.memory = found.memory;
      this.neighbours = found.neighbours || [];
      this.show();
    } catch (error) {
      this.fail(error);
    }
  }

  fail(error) {
    this.body.replaceChildren(el("p", { class: "error", role: "alert", text: `${error.type || "Error"}: ${error.message}` }));
  }

  show(notice) {
    const m = this.memory;
    this.section.dataset.memoryId = m.id;
    const p = m.provenance || {};
    const origin = [p.via, p.client, p.session_id || m.session_id ? `session ${p.session_id || m.session_id}` : ""]
      .filter(Boolean)
      .join(" · ");
    const facts = [
      ["Type", m.memory_type],
      ["Namespace", m.namespace],
      ["Tags", m.tags.length ? m.tags.map((t) => el("span", { class: "chip", text: t })) : "none"],
      ["Importance", m.importance.toFixed(2)],
      ["Pinned", m.pinned ? "yes" : "no"],
      ["Created", when(m.created_at)],
      ["Updated", when(m.updated_at)],
      ["Expires", m.expires_at ? when(m.expires_at) : "never"],
      ["Written by", origin || "unknown"],
      ["Version", `${m.version} (${m.versions} kept)`],
    ];
    if (!m.current) facts.push(["Superseded by", m.superseded_by || "?"]);
    const actions = m.current
      ? [
          el("button", { type: "button", onclick: () => this.edit() }, "Edit"),
          el("button", { type: "button", onclick: () => this.pin(!m.pinned) }, m.pinned ? "Unpin" : "Pin"),
          el("button", { type: "button", onclick: () => this.forget() }, "Forget"),
          el("button", { type: "button", onclick: () => this.history() }, "History"),
        ]
      : [el("button", { type: "button", onclick: () => this.history() }, "History")];
    const from = this.atlas.journeyFrom;
    actions.push(
      from && from !== m.id
        ? el("button", { type: "button", onclick: () => this.atlas.journey(from, m.id) }, "Journey to here")
        : el("button", { type: "button", onclick: () => this.atlas.setJourneyFrom(m.id) }, "Start a journey here"),
    );
    const relations = (m.relations || []).map((r) => {
      const other = r.source_id === m.id ? r.target_id : r.source_id;
      const arrow = r.source_id === m.id ? "→" : "←";
      return el("li", {}, `${r.relation} ${arrow} `, this.link(other, other.slice(0, 8)));
    });
    const neighbours = this.neighbours.map((n) =>
      el("li", {}, this.link(n.id, shorten(n.content, 70)), ` (${n.similarity.toFixed(2)})`),
    );
    this.body.replaceChildren(
      ...[
      el("h2", { id: "panel-title" }, m.current ? "Memory" : "Memory (superseded)"),
      notice ? el("p", { role: "status", text: notice }) : null,
      el("p", { class: "content", text: m.content }),
      el("div", { class: "actions" }, actions),
      el("dl", {}, facts.map(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)])),
      el("h3", { text: "Relations" }),
      relations.length ? el("ul", {}, relations) : el("p", { class: "meta", text: "none" }),
      el("h3", { text: "Neighbours" }),
      neighbours.length ? el("ul", {}, neighbours) : el("p", { class: "meta", text: "none" }),
      el("div", { id: "panel-extra" }),
      ].filter(Boolean),
    );
  }

  link(id, text) {
    return el("button", { type: "button", class: "link", onclick: () => this.atlas.open(id) }, text);
  }

  async run(operation, args, kind) {
    try {
      const result = await this.atlas.transport.call(operation, args);
      return result;
    } catch (error) {
      const extra = this.body.querySelector("#panel-extra") || this.body;
      extra.replaceChildren(el("p", { class: "error", role: "alert", text: `${error.type || "Error"}: ${error.message}` }));
      return null;
    }
  }

  async pin(pinned) {
    const result = await this.run("update", { id: this.memory.id, pinned });
    if (!result) return;
    await this.refresh(result.memory, pinned ? "Pinned." : "Unpinned.");
  }

  async refresh(detail, notice) {
    this.atlas.changed("update", detail.id, detail);
    const found = await this.atlas.transport.call("memory", { id: detail.id });
    if (found.memory) {
      this.memory = found.memory;
      this.neighbours = found.neighbours || this.neighbours;
    }
    this.show(notice);
  }

  edit() {
    const m = this.memory;
    const content = el("textarea", { name: "content" });
    content.value = m.content;
    const tags = el("input", { name: "tags", type: "text", value: m.tags.join(", ") });
    const importance = el("input", { name: "importance", type: "number", min: 0, max: 1, step: 0.05, value: m.importance });
    const type = el("select", { name: "memory_type" }, TYPES.map((t) => el("option", { value: t, selected: t === m.memory_type }, t)));
    // Not a <form>: a sandboxed host frame may not submit one; Save does the work.
    const form = el(
      "div",
      { role: "form", "aria-label": "Edit memory" },
      el("label", {}, "Content", content),
      el("label", {}, "Tags (comma separated)", tags),
      el("label", {}, "Importance (0-1)", importance),
      el("label", {}, "Type", type),
      el(
        "div",
        { class: "actions" },
        el("button", { type: "button", onclick: () => save() }, "Save"),
        el("button", { type: "button", onclick: () => this.show() }, "Cancel"),
      ),
    );
    const save = async () => {
      const changes = { id: m.id };
      if (content.value !== m.content) changes.content = content.value;
      const newTags = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
      if (newTags.join("\n") !== m.tags.join("\n")) changes.tags = newTags;
      const value = Number(importance.value);
      if (!Number.isNaN(value) && Math.abs(value - m.importance) > 1e-9) changes.importance = value;
      if (type.value !== m.memory_type) changes.memory_type = type.value;
      if (Object.keys(changes).length === 1) return this.show("Nothing changed.");
      const result = await this.run("update", changes);
      if (result) await this.refresh(result.memory, `Saved: ${result.changed.join(", ") || "no change"}.`);
    };
    const extra = this.body.querySelector("#panel-extra");
    extra.replaceChildren(el("h3", { text: "Edit" }), form);
    content.focus();
  }

  forget() {
    const m = this.memory;
    const dialog = this.dialog;
    dialog.querySelector("#forget-text").textContent = shorten(m.content, 300);
    dialog.querySelector("#forget-cancel").onclick = () => dialog.close("cancel");
    dialog.querySelector("#forget-confirm").onclick = () => dialog.close("forget");
    dialog.returnValue = "";
    dialog.onclose = async () => {
      if (dialog.returnValue !== "forget") return;
      const result = await this.run("forget", { id: m.id });
      if (!result) return;
      this.atlas.changed("forget", m.id, null);
      this.body.replaceChildren(el("p", { role: "status", text: "Forgotten." }));
      this.memory = null;
    };
    dialog.showModal();
    dialog.querySelector("#forget-cancel").focus();
  }

  async history() {
    const m = this.memory;
    const extra = this.body.querySelector("#panel-extra");
    extra.replaceChildren(el("p", { text: "Loading the history…" }));
    const result = await this.run("history", { id: m.id });
    if (!result) return;
    const items = result.versions.map((v) => {
      const diff = v.diff
        ? el("p", { class: "diff" }, v.diff.map((part) => (part.op === "insert" ? el("ins", { text: part.text }) : part.op === "delete" ? el("del", { text: part.text }) : part.text)))
        : el("p", { class: "diff", text: v.content });
      const changed = v.changed && v.changed.length ? `changed: ${v.changed.join(", ")}` : v.changed ? "no change" : "first version kept";
      const revert =
        m.current && !v.current
          ? el("button", { type: "button", onclick: () => this.revert(v.version) }, `Revert to version ${v.version}`)
          : null;
      return el(
        "li",
        { class: "version" },
        el("strong", {}, `Version ${v.version}${v.current ? " (current)" : ""}`),
        ` · ${when(v.valid_from)} · ${(v.provenance && v.provenance.via) || ""}`,
        el("div", { class: "meta", text: changed }),
        diff,
        revert,
      );
    });
    extra.replaceChildren(el("h3", { text: `History (${result.total} versions)` }), el("ol", { "aria-label": "Versions", class: "versions" }, items));
  }

  async revert(version) {
    const result = await this.run("revert", { id: this.memory.id, version });
    if (!result) return;
    await this.refresh(result.memory, `Reverted to version ${version} (now version ${result.memory.version}).`);
    await this.history();
  }
}
