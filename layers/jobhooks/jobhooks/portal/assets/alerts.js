// Job-health alert rules on the Job health page: the tenant's rules (and the jobs each finds
// degraded now), a form to add one, a button to remove one, and the recent alerts they sent.
// The evaluation runs on the server every few minutes; see docs/notifications.md.
import { api, ApiError } from "./api.js";
import { announce, confirmDialog, h, when } from "./dom.js";

export async function alertsSection(reload) {
  const listing = await api.alertRules();
  return [
    h("h2", { id: "rules-heading" }, "Alert rules"),
    h(
      "p",
      { className: "hint" },
      "When a job's failure rate or p95 duration crosses a rule's threshold, your endpoints that receive job_health.degraded are told, and job_health.recovered when it is back under.",
    ),
    listing.rules.length ? rulesList(listing.rules, reload) : h("p", {}, "No alert rule yet."),
    h("h3", { id: "add-rule-heading" }, "Add a rule"),
    ruleForm(reload),
    h("h2", {}, "Recent alerts"),
    listing.recent_alerts.length ? alertsTable(listing.recent_alerts) : h("p", {}, "No alert has been sent."),
  ];
}

function thresholds(rule) {
  const parts = [];
  if (rule.failure_rate !== null && rule.failure_rate !== undefined) parts.push(`failure rate at or above ${Math.round(rule.failure_rate * 1000) / 10} %`);
  if (rule.p95_ms !== null && rule.p95_ms !== undefined) parts.push(`p95 at or above ${rule.p95_ms} ms`);
  return parts.join(" or ");
}

function rulesList(rules, reload) {
  return h(
    "ul",
    { className: "list", "aria-labelledby": "rules-heading" },
    rules.map((rule) => {
      const remove = h("button", { type: "button", className: "danger" }, "Remove");
      remove.addEventListener("click", async () => {
        const sure = await confirmDialog("Remove this rule?", `Jobs matching ${rule.job_name} are no longer watched.`, "Remove");
        if (!sure) return;
        await api.removeAlertRule(rule.rule_id);
        announce("Alert rule removed.");
        await reload();
      });
      const degraded = rule.degraded.length
        ? h("p", { className: "error" }, `Degraded now: ${rule.degraded.map((job) => `${job.job_name} (since ${when(job.degraded_since)})`).join(", ")}`)
        : h("p", { className: "hint" }, "Every matching job is healthy.");
      return h(
        "li",
        {},
        h("div", { className: "row" }, h("span", { className: "mono" }, rule.job_name), remove),
        h("p", { className: "hint" }, `${thresholds(rule)}, over ${Math.round(rule.window_seconds / 60)} min with at least ${rule.min_outcomes} outcomes`),
        degraded,
      );
    }),
  );
}

function field(id, label, input, hint) {
  return h("div", { className: "field" }, h("label", { for: id }, label), input, hint ? h("p", { className: "hint", id: `${id}-hint` }, hint) : null);
}

function ruleForm(reload) {
  const error = h("p", { id: "rule-error", className: "error", "aria-live": "assertive" });
  const jobName = h("input", { id: "rule-job-name", name: "job_name", type: "text", required: true, spellcheck: "false", placeholder: "billing-*" });
  const rate = h("input", { id: "rule-failure-rate", name: "failure_rate", type: "number", min: "1", max: "100", step: "1", placeholder: "20" });
  const p95 = h("input", { id: "rule-p95", name: "p95_ms", type: "number", min: "1", step: "1", placeholder: "60000" });
  const minOutcomes = h("input", { id: "rule-min-outcomes", name: "min_outcomes", type: "number", min: "1", step: "1", value: "10" });
  const windowMinutes = h("input", { id: "rule-window", name: "window", type: "number", min: "1", max: "1440", step: "1", value: "15" });
  const form = h(
    "form",
    { "aria-labelledby": "add-rule-heading", novalidate: true },
    field("rule-job-name", "Jobs", jobName, "A job name, or a pattern such as billing-*."),
    field("rule-failure-rate", "Failure rate at or above (%)", rate),
    field("rule-p95", "p95 duration at or above (ms)", p95, "Give a failure rate, a p95 duration or both."),
    field("rule-min-outcomes", "At least this many outcomes", minOutcomes),
    field("rule-window", "Over the last (minutes)", windowMinutes),
    error,
    h("button", { type: "submit" }, "Add rule"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    const fields = {
      job_name: jobName.value.trim(),
      min_outcomes: Number(minOutcomes.value || 10),
      window_seconds: Number(windowMinutes.value || 15) * 60,
    };
    if (rate.value) fields.failure_rate = Number(rate.value) / 100;
    if (p95.value) fields.p95_ms = Number(p95.value);
    if (!fields.job_name) return fail("Jobs: enter a job name or a pattern.", jobName);
    if (fields.failure_rate === undefined && fields.p95_ms === undefined) return fail("Give a failure rate, a p95 duration or both.", rate);
    try {
      await api.createAlertRule(fields);
    } catch (failure) {
      if (!(failure instanceof ApiError) || failure.status === 401 || failure.status === 403) throw failure;
      return fail(failure.message, null);
    }
    announce("Alert rule added.");
    await reload();
    return undefined;
  });

  function fail(message, input) {
    error.textContent = message;
    if (input) input.focus();
  }

  return form;
}

function alertsTable(alerts) {
  return h(
    "table",
    {},
    h("caption", {}, "Newest first"),
    h("thead", {}, h("tr", {}, ["When", "Alert", "Job", "Failures", "p95 (ms)", "Endpoints told"].map((name) => h("th", { scope: "col" }, name)))),
    h(
      "tbody",
      {},
      alerts.map((alert) =>
        h(
          "tr",
          {},
          h("td", {}, when(alert.at)),
          h("td", {}, alert.type === "job_health.degraded" ? "Degraded" : "Recovered"),
          h("td", { className: "mono" }, alert.job_name),
          h("td", {}, `${alert.failures} of ${alert.outcomes}`),
          h("td", {}, alert.p95_duration_ms === null || alert.p95_duration_ms === undefined ? "-" : String(alert.p95_duration_ms)),
          h("td", {}, String(alert.deliveries)),
        ),
      ),
    ),
  );
}
