// A small SVG bar chart of per-day values (the byDay series of GET /reporting/dialer-metrics),
// drawn by the page itself: no libraries, no third-party services, no inline styles.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 760;
const HEIGHT = 230;
const MARGIN = { top: 18, right: 12, bottom: 38, left: 44 };

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Flattens one level of nesting: {date, calls: {total: 3}} -> {"calls.total": 3}.
function numericSeries(rows) {
  const flat = rows.map((row) => {
    const out = {};
    for (const [key, value] of Object.entries(row)) {
      if (value && typeof value === "object" && !Array.isArray(value)) {
        for (const [inner, v] of Object.entries(value)) out[`${key}.${inner}`] = v;
      } else {
        out[key] = value;
      }
    }
    return out;
  });
  const names = Object.keys(flat[0] || {}).filter((name) =>
    flat.every((row) => typeof row[name] === "number" && Number.isFinite(row[name])));
  const label = Object.keys(flat[0] || {}).find((name) => typeof flat[0][name] === "string") || null;
  return { flat, names, label };
}

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

function format(value) {
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  return value.toLocaleString("en-US", { maximumFractionDigits: 2 });
}

function render(target, flat, label, metric) {
  const values = flat.map((row) => row[metric]);
  const highest = Math.max(...values, 0);
  // Counts get whole-number ticks; rates and averages get round ones.
  const top = values.every(Number.isInteger)
    ? 4 * Math.max(1, Math.ceil(niceMax(highest) / 4))
    : niceMax(highest);
  const innerW = WIDTH - MARGIN.left - MARGIN.right;
  const innerH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const slot = innerW / Math.max(values.length, 1);
  const barW = Math.max(2, Math.min(42, slot * 0.7));
  const chart = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img",
    "aria-label": `${metric} by day`, class: "chart-svg",
  });
  for (let i = 0; i <= 4; i += 1) {
    const y = MARGIN.top + innerH - (innerH * i) / 4;
    chart.append(svg("line", { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y, y2: y, class: "grid" }));
    chart.append(svg("text", { x: MARGIN.left - 6, y: y + 3, "text-anchor": "end", class: "axis" },
      format((top * i) / 4)));
  }
  const labelEvery = Math.ceil(values.length / 12);
  values.forEach((value, index) => {
    const x = MARGIN.left + slot * index + (slot - barW) / 2;
    const h = (innerH * value) / top;
    const y = MARGIN.top + innerH - h;
    const bar = svg("rect", { x, y, width: barW, height: Math.max(h, 0), rx: 2, class: "bar" });
    const name = label ? flat[index][label] : `#${index + 1}`;
    bar.append(svg("title", {}, `${name}: ${format(value)}`));
    chart.append(bar);
    if (values.length <= 16) {
      chart.append(svg("text", { x: x + barW / 2, y: y - 4, "text-anchor": "middle", class: "value" },
        format(value)));
    }
    if (index % labelEvery === 0) {
      const text = String(name).length === 10 ? String(name).slice(5) : String(name);
      chart.append(svg("text", {
        x: x + barW / 2, y: HEIGHT - MARGIN.bottom + 16, "text-anchor": "middle", class: "axis",
      }, text));
    }
  });
  target.replaceChildren(chart);
}

export function drawChart(container, rows) {
  const { flat, names, label } = numericSeries(rows);
  if (!names.length) {
    container.remove();
    return;
  }
  const head = document.createElement("div");
  head.className = "chart-head";
  const title = document.createElement("span");
  title.textContent = `By day (${flat.length} day${flat.length === 1 ? "" : "s"})`;
  const select = document.createElement("select");
  select.setAttribute("aria-label", "metric");
  for (const name of names) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    select.append(option);
  }
  const area = document.createElement("div");
  area.className = "chart-area";
  select.addEventListener("change", () => render(area, flat, label, select.value));
  head.append(title, select);
  container.replaceChildren(head, area);
  render(area, flat, label, names[0]);
}
