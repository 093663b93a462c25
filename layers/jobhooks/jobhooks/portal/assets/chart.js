// The job health chart: one small multiple per measure (failure rate, p95 duration), one line
// per job_name, days along the bottom, drawn as SVG elements (no inline style, no library).
import { h, svg } from "./dom.js";

const WIDTH = 640;
const HEIGHT = 220;
const PAD = { left: 56, right: 12, top: 12, bottom: 34 };
const MAX_SERIES = 6;

export function jobHealthCharts(points) {
  const days = [...new Set(points.map((point) => point.day))].sort();
  const totals = new Map();
  for (const point of points) totals.set(point.job_name, (totals.get(point.job_name) || 0) + point.outcomes);
  const jobs = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, MAX_SERIES).map(([name]) => name);
  const legend = h(
    "ul",
    { className: "legend", "aria-label": "Job names" },
    jobs.map((job, index) => h("li", {}, h("span", { className: `swatch series-${index}`, "aria-hidden": "true" }), job)),
  );
  return [
    legend,
    chart("Failure rate by day", "failure_rate", points, days, jobs, (value) => `${Math.round(value * 100)}%`, 1),
    chart("p95 duration by day (ms)", "p95_duration_ms", points, days, jobs, (value) => `${Math.round(value)}`),
  ];
}

function chart(title, measure, points, days, jobs, label, fixedMax) {
  const values = points.filter((point) => point[measure] !== null && point[measure] !== undefined);
  const max = fixedMax || Math.max(1, ...values.map((point) => point[measure]));
  const x = (day) =>
    PAD.left + (days.length === 1 ? (WIDTH - PAD.left - PAD.right) / 2 : (days.indexOf(day) * (WIDTH - PAD.left - PAD.right)) / (days.length - 1));
  const y = (value) => HEIGHT - PAD.bottom - (value / max) * (HEIGHT - PAD.top - PAD.bottom);
  const drawing = svg("svg", {
    class: "chart",
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": `${title}: the table below has the same numbers`,
  });
  for (const step of [0, 0.5, 1]) {
    const level = y(max * step);
    drawing.append(
      svg("line", { class: "grid", x1: PAD.left, x2: WIDTH - PAD.right, y1: level, y2: level }),
      svg("text", { x: PAD.left - 6, y: level + 4, "text-anchor": "end" }, label(max * step)),
    );
  }
  drawing.append(svg("line", { class: "axis", x1: PAD.left, x2: WIDTH - PAD.right, y1: y(0), y2: y(0) }));
  for (const day of [days[0], days[days.length - 1]]) {
    if (day) drawing.append(svg("text", { x: x(day), y: HEIGHT - 10, "text-anchor": "middle" }, day));
  }
  jobs.forEach((job, index) => {
    const series = values.filter((point) => point.job_name === job).sort((a, b) => (a.day < b.day ? -1 : 1));
    if (series.length > 1) {
      const path = series.map((point, at) => `${at ? "L" : "M"}${x(point.day).toFixed(1)},${y(point[measure]).toFixed(1)}`).join(" ");
      drawing.append(svg("path", { class: `line series-${index}`, d: path }));
    }
    for (const point of series) {
      drawing.append(svg("circle", { class: `series-${index}`, cx: x(point.day), cy: y(point[measure]), r: 3.5 }));
    }
  });
  return h("figure", {}, h("figcaption", {}, h("h2", {}, title)), drawing);
}

export function jobHealthTable(points) {
  return h(
    "div",
    { className: "table-wrap" },
    h(
      "table",
      {},
      h("caption", { className: "hint" }, "The numbers behind the charts"),
      h(
        "thead",
        {},
        h("tr", {}, ["Day", "Job name", "Outcomes", "Failures", "Failure rate", "p95 duration (ms)"].map((name) => h("th", { scope: "col" }, name))),
      ),
      h(
        "tbody",
        {},
        points.map((point) =>
          h(
            "tr",
            {},
            h("td", {}, point.day),
            h("td", {}, point.job_name),
            h("td", {}, String(point.outcomes)),
            h("td", {}, String(point.failures)),
            h("td", {}, `${(point.failure_rate * 100).toFixed(1)}%`),
            h("td", {}, point.p95_duration_ms === null ? "not measured" : String(point.p95_duration_ms)),
          ),
        ),
      ),
    ),
  );
}
