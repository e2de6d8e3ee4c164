// The map on a canvas: points by region colour and importance, region labels, pan and zoom
// (pointer, wheel, keyboard), hover to read, click to open; hits, selection and a journey on top.

import { CAPTURED, PINNED } from "./data.js";

const GRID = 64;
const TAU = Math.PI * 2;

// "#rrggbb", "#rgb" or "rgb(a)(r, g, b, ...)" as [r, g, b].
function parseColour(text) {
  let m = /^#([0-9a-f]{6})$/i.exec(text);
  if (m) return [0, 2, 4].map((k) => parseInt(m[1].slice(k, k + 2), 16));
  m = /^#([0-9a-f]{3})$/i.exec(text);
  if (m) return [...m[1]].map((h) => parseInt(h + h, 16));
  m = /rgba?\(([^)]*)\)/.exec(text);
  if (m) return m[1].split(",").slice(0, 3).map((v) => Math.round(Number(v)));
  return [128, 128, 128];
}

function mix(colour, background, alpha) {
  return colour.map((v, k) => Math.round(alpha * v + (1 - alpha) * background[k]));
}

// An opaque pixel as a little-endian Uint32 (ImageData's bytes are r, g, b, a).
function pack([r, g, b]) {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

export class MapView {
  constructor(container, canvas, tooltip, handlers) {
    this.container = container;
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.tooltip = tooltip;
    this.handlers = handlers;
    this.data = null;
    this.visible = [];
    this.hits = new Set();
    this.selected = [];
    this.journey = [];
    this.k = 1;
    this.px = 0;
    this.py = 0;
    this.hover = -1;
    this.cursor = -1; // keyboard position in `order`
    this.frames = 0;
    this.lastDrawMs = 0;
    this.pending = false;
    this.bind();
    new ResizeObserver(() => this.resize()).observe(container);
    this.resize();
  }

  // ---- state -------------------------------------------------------------------------------

  setData(data, visible) {
    this.data = data;
    this.visible = visible;
    // Smaller points last would hide under bigger ones: draw by importance, biggest last.
    this.order = [...visible].sort((a, b) => data.importance[a] - data.importance[b]);
    this.groups = new Map();
    for (const i of this.order) {
      const color = data.color(i);
      if (!this.groups.has(color)) this.groups.set(color, []);
      this.groups.get(color).push(i);
    }
    this.buildGrid();
    this.container.dataset.count = String(visible.length);
    this.hover = -1;
    this.request();
  }

  setHits(ids) {
    this.hits = new Set(ids);
    this.request();
  }

  setSelected(ids) {
    this.selected = ids.filter((id) => this.data && this.data.index.has(id));
    this.request();
  }

  setJourney(ids) {
    this.journey = ids;
    this.request();
  }

  reset() {
    this.k = 1;
    this.px = 0;
    this.py = 0;
    this.request();
  }

  centreOn(id) {
    const i = this.data ? this.data.index.get(id) : undefined;
    if (i === undefined) return;
    this.px = -this.data.x[i] * this.baseX() * this.k;
    this.py = this.data.y[i] * this.baseY() * this.k;
    this.request();
  }

  panBy(dx, dy) {
    this.px += dx;
    this.py += dy;
    this.request();
  }

  zoomAt(factor, mx, my) {
    const k = Math.min(200, Math.max(0.3, this.k * factor));
    const f = k / this.k;
    const cx = this.width / 2;
    const cy = this.height / 2;
    this.px = mx - cx - (mx - cx - this.px) * f;
    this.py = my - cy - (my - cy - this.py) * f;
    this.k = k;
    this.request();
  }

  // ---- geometry ----------------------------------------------------------------------------

  // The map's [-1, 1] square stretched to the canvas (a margin kept for labels): a layout's axes
  // carry no meaning of their own, and a wide window is not wasted.
  baseX() {
    return 0.43 * this.width;
  }

  baseY() {
    return 0.42 * this.height;
  }

  sx(x) {
    return this.width / 2 + x * this.baseX() * this.k + this.px;
  }

  sy(y) {
    return this.height / 2 - y * this.baseY() * this.k + this.py;
  }

  radius(i) {
    return (2.6 + 5 * Math.max(0, Math.min(1, this.data.importance[i]))) * Math.min(2.5, Math.sqrt(this.k));
  }

  buildGrid() {
    this.grid = new Map();
    for (const i of this.visible) {
      const key = this.cell(this.data.x[i], this.data.y[i]);
      if (!this.grid.has(key)) this.grid.set(key, []);
      this.grid.get(key).push(i);
    }
  }

  cell(x, y) {
    const gx = Math.max(0, Math.min(GRID - 1, Math.floor(((x + 1) / 2) * GRID)));
    const gy = Math.max(0, Math.min(GRID - 1, Math.floor(((y + 1) / 2) * GRID)));
    return gy * GRID + gx;
  }

  // The visible memory under a screen point, or -1.
  hitTest(mx, my) {
    if (!this.data || !this.visible.length) return -1;
    const scaleX = this.baseX() * this.k;
    const scaleY = this.baseY() * this.k;
    const wx = (mx - this.width / 2 - this.px) / scaleX;
    const wy = -(my - this.height / 2 - this.py) / scaleY;
    const reach = 12 / Math.min(scaleX, scaleY);
    const cells = Math.ceil((reach / 2) * GRID) + 1;
    const gx = Math.floor(((wx + 1) / 2) * GRID);
    const gy = Math.floor(((wy + 1) / 2) * GRID);
    let best = -1;
    let bestD = Infinity;
    for (let y = Math.max(0, gy - cells); y <= Math.min(GRID - 1, gy + cells); y++) {
      for (let x = Math.max(0, gx - cells); x <= Math.min(GRID - 1, gx + cells); x++) {
        for (const i of this.grid.get(y * GRID + x) || []) {
          const dx = this.sx(this.data.x[i]) - mx;
          const dy = this.sy(this.data.y[i]) - my;
          const d = dx * dx + dy * dy;
          const r = this.radius(i) + 4;
          if (d <= r * r && d < bestD) {
            best = i;
            bestD = d;
          }
        }
      }
    }
    return best;
  }

  // ---- input -------------------------------------------------------------------------------

  bind() {
    const c = this.container;
    let drag = null;
    c.addEventListener("pointerdown", (e) => {
      drag = { x: e.clientX, y: e.clientY, px: this.px, py: this.py, moved: false };
      c.setPointerCapture(e.pointerId);
    });
    c.addEventListener("pointermove", (e) => {
      const r = c.getBoundingClientRect();
      if (drag) {
        const dx = e.clientX - drag.x;
        const dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
        if (drag.moved) {
          this.px = drag.px + dx;
          this.py = drag.py + dy;
          this.hideTip();
          this.request();
          return;
        }
      }
      const i = this.hitTest(e.clientX - r.left, e.clientY - r.top);
      if (i !== this.hover) {
        this.hover = i;
        this.request();
      }
      if (i >= 0) this.showTip(i, e.clientX - r.left, e.clientY - r.top);
      else this.hideTip();
    });
    c.addEventListener("pointerup", (e) => {
      const was = drag;
      drag = null;
      if (was && !was.moved) {
        const r = c.getBoundingClientRect();
        const i = this.hitTest(e.clientX - r.left, e.clientY - r.top);
        if (i >= 0) this.handlers.onPick(this.data.ids[i], e.shiftKey);
      }
    });
    c.addEventListener("pointerleave", () => {
      this.hover = -1;
      this.hideTip();
      this.request();
    });
    c.addEventListener(
      "wheel",
      (e) => {
        e.preventDefault();
        const r = c.getBoundingClientRect();
        this.zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
      },
      { passive: false },
    );
    c.addEventListener("keydown", (e) => this.key(e));
  }

  key(e) {
    const step = 48;
    const keys = {
      ArrowLeft: () => this.panBy(step, 0),
      ArrowRight: () => this.panBy(-step, 0),
      ArrowUp: () => this.panBy(0, step),
      ArrowDown: () => this.panBy(0, -step),
      "+": () => this.zoomAt(1.25, this.width / 2, this.height / 2),
      "=": () => this.zoomAt(1.25, this.width / 2, this.height / 2),
      "-": () => this.zoomAt(0.8, this.width / 2, this.height / 2),
      0: () => this.reset(),
      n: () => this.step(1),
      p: () => this.step(-1),
      Enter: () => {
        if (this.hover >= 0) this.handlers.onPick(this.data.ids[this.hover], e.shiftKey);
      },
    };
    const action = keys[e.key];
    if (!action) return;
    e.preventDefault();
    action();
  }

  // Keyboard reading: n / p move to the next / previous memory, most important first.
  step(direction) {
    if (!this.order || !this.order.length) return;
    const n = this.order.length;
    this.cursor = this.cursor < 0 ? (direction > 0 ? n - 1 : 0) : (this.cursor - direction + n) % n;
    this.hover = this.order[this.cursor];
    this.centreOn(this.data.ids[this.hover]);
    this.showTip(this.hover, this.width / 2, this.height / 2);
  }

  showTip(i, x, y) {
    const flags = this.data.flags[i];
    const marks = [flags & PINNED ? "pinned" : "", flags & CAPTURED ? "captured" : "", this.data.type[i]].filter(Boolean);
    this.tooltip.textContent = this.data.label[i] + (marks.length ? `  (${marks.join(", ")})` : "");
    this.tooltip.hidden = false;
    const left = Math.min(x + 14, this.width - this.tooltip.offsetWidth - 4);
    const top = y + 14 + this.tooltip.offsetHeight > this.height ? y - this.tooltip.offsetHeight - 10 : y + 14;
    this.tooltip.style.left = `${Math.max(4, left)}px`;
    this.tooltip.style.top = `${Math.max(4, top)}px`;
    this.container.setAttribute("aria-description", this.data.label[i]);
  }

  hideTip() {
    this.tooltip.hidden = true;
  }

  // ---- drawing -----------------------------------------------------------------------------

  resize() {
    const dpr = window.devicePixelRatio || 1;
    this.dpr = dpr;
    this.width = this.container.clientWidth || 600;
    this.height = this.container.clientHeight || 400;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.request();
  }

  request() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  // The theme's colours, read once per theme (reading styles in every frame costs a style pass).
  colours() {
    const theme = document.documentElement.dataset.theme || "";
    if (this.theme && this.theme.name === theme && this.theme.groups === this.groups) return this.theme;
    const style = getComputedStyle(document.documentElement);
    const get = (name) => style.getPropertyValue(name).trim();
    const bg = parseColour(get("--bg"));
    const packed = new Map();
    for (const colour of this.groups.keys()) packed.set(colour, pack(mix(parseColour(colour), bg, 0.88)));
    this.theme = {
      name: theme,
      groups: this.groups,
      fg: get("--fg"),
      halo: get("--halo"),
      hit: get("--hit"),
      accent: get("--accent"),
      background: pack(bg),
      packed,
    };
    return this.theme;
  }

  // The points go straight into a pixel buffer, one row span per line of each disc (a square for a
  // hook's capture), then onto the canvas in one putImageData: 10,000 anti-aliased arcs in a path
  // cost the software rasterizer ~50 ms a frame, this a few.
  drawPoints(colours, pinned) {
    const d = this.data;
    const W = this.canvas.width;
    const H = this.canvas.height;
    const dpr = this.dpr;
    if (!this.image || this.image.width !== W || this.image.height !== H) {
      this.image = this.ctx.createImageData(W, H);
      this.pixels = new Uint32Array(this.image.data.buffer);
    }
    const px = this.pixels;
    px.fill(colours.background);
    for (const [colour, members] of this.groups) {
      const c = colours.packed.get(colour);
      for (const i of members) {
        const r = Math.max(1, Math.round(this.radius(i) * dpr));
        const x = Math.round(this.sx(d.x[i]) * dpr);
        const y = Math.round(this.sy(d.y[i]) * dpr);
        if (x < -r || y < -r || x >= W + r || y >= H + r) continue;
        const square = d.flags[i] & CAPTURED;
        if (d.flags[i] & PINNED) pinned.push(i);
        for (let dy = -r; dy <= r; dy++) {
          const row = y + dy;
          if (row < 0 || row >= H) continue;
          const half = square ? r : Math.round(Math.sqrt(r * r - dy * dy));
          const x0 = Math.max(0, x - half);
          const x1 = Math.min(W - 1, x + half);
          if (x0 <= x1) px.fill(c, row * W + x0, row * W + x1 + 1);
        }
      }
    }
    this.ctx.putImageData(this.image, 0, 0);
  }

  draw() {
    const started = performance.now();
    const ctx = this.ctx;
    ctx.clearRect(0, 0, this.width, this.height);
    if (!this.data) return;
    const colours = this.colours();
    const { fg, halo, hit, accent } = colours;
    const d = this.data;
    const pinned = [];
    this.drawPoints(colours, pinned);
    this.ring(pinned, fg, 1.6, 2);
    this.drawSuperseded(fg);
    const hits = [];
    for (const id of this.hits) {
      const i = d.index.get(id);
      if (i !== undefined) hits.push(i);
    }
    this.ring(hits, hit, 2.5, 4);
    this.drawJourney(accent, halo);
    this.ring(this.selected.map((id) => d.index.get(id)), accent, 3, 6);
    if (this.hover >= 0) this.ring([this.hover], fg, 2, 5);
    this.drawRegionLabels(fg, halo);
    this.frames++;
    this.lastDrawMs = performance.now() - started;
  }

  ring(indices, color, width, extra) {
    const d = this.data;
    const ctx = this.ctx;
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.beginPath();
    for (const i of indices) {
      if (i === undefined || i < 0) continue;
      const x = this.sx(d.x[i]);
      const y = this.sy(d.y[i]);
      const r = this.radius(i) + extra;
      ctx.moveTo(x + r, y);
      ctx.arc(x, y, r, 0, TAU);
    }
    ctx.stroke();
  }

  // A superseded memory: a hollow dashed circle beside its successor, linked to it.
  drawSuperseded(color) {
    const d = this.data;
    const ctx = this.ctx;
    if (!d.superseded.length) return;
    ctx.save();
    ctx.strokeStyle = color;
    ctx.globalAlpha = 0.7;
    ctx.setLineDash([3, 3]);
    ctx.lineWidth = 1.2;
    ctx.beginPath();
    for (const s of d.superseded) {
      const i = d.index.get(s.successor);
      if (i === undefined || !this.isVisible(i)) continue;
      const x = this.sx(d.x[i]);
      const y = this.sy(d.y[i]);
      const gx = x - 14;
      const gy = y - 14;
      ctx.moveTo(gx + 5, gy);
      ctx.arc(gx, gy, 5, 0, TAU);
      ctx.moveTo(gx + 3.5, gy + 3.5);
      ctx.lineTo(x - this.radius(i), y - this.radius(i));
    }
    ctx.stroke();
    ctx.restore();
  }

  isVisible(i) {
    if (!this.visibleSet || this.visibleSet.source !== this.visible) {
      this.visibleSet = new Set(this.visible);
      this.visibleSet.source = this.visible;
    }
    return this.visibleSet.has(i);
  }

  drawJourney(color, halo) {
    const d = this.data;
    const points = this.journey.map((id) => d.index.get(id)).filter((i) => i !== undefined);
    if (points.length < 2) return;
    const ctx = this.ctx;
    ctx.save();
    ctx.lineJoin = "round";
    for (const [stroke, width] of [[halo, 6], [color, 3]]) {
      ctx.strokeStyle = stroke;
      ctx.lineWidth = width;
      ctx.beginPath();
      points.forEach((i, n) => {
        const x = this.sx(d.x[i]);
        const y = this.sy(d.y[i]);
        if (n === 0) ctx.moveTo(x, y);
        else ctx.lineTo(x, y);
      });
      ctx.stroke();
    }
    ctx.fillStyle = color;
    ctx.font = "bold 11px system-ui, sans-serif";
    points.forEach((i, n) => {
      ctx.fillText(String(n + 1), this.sx(d.x[i]) + 7, this.sy(d.y[i]) - 7);
    });
    ctx.restore();
  }

  drawRegionLabels(fg, halo) {
    const ctx = this.ctx;
    const placed = [];
    ctx.save();
    ctx.font = "600 12px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.lineJoin = "round";
    const regions = [...this.data.regions].sort((a, b) => b.size - a.size);
    for (const r of regions) {
      if (this.k < 1.5 && r.size < 3) continue;
      const width = ctx.measureText(r.label).width;
      // Above the region's centre, kept inside the canvas.
      const x = Math.min(this.width - width / 2 - 4, Math.max(width / 2 + 4, this.sx(r.x)));
      const y = this.sy(r.y) - 10;
      const box = [x - width / 2 - 4, y - 14, x + width / 2 + 4, y + 4];
      if (box[2] < 0 || box[0] > this.width || box[3] < 0 || box[1] > this.height) continue;
      if (placed.some((b) => box[0] < b[2] && b[0] < box[2] && box[1] < b[3] && b[1] < box[3])) continue;
      placed.push(box);
      ctx.strokeStyle = halo;
      ctx.lineWidth = 4;
      ctx.strokeText(r.label, x, y);
      ctx.fillStyle = fg;
      ctx.fillText(r.label, x, y);
    }
    ctx.restore();
  }
}
