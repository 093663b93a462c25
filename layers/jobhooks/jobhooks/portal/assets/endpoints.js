// Endpoints: list, add, edit, disable / enable, delete, rotate the secret, send a test, recover
// what an outage left undelivered, and the deliveries of one endpoint with every attempt.
import { api, ApiError } from "./api.js";
import { announce, confirmDialog, copyButton, h, show, when } from "./dom.js";
import { nodeSnippet, pythonSnippet } from "./snippets.js";

const EVENT_TYPES = [
  ["job.completed", "A job completed"],
  ["job.failed", "A job failed"],
  ["job_health.degraded", "A job-health alert started"],
  ["job_health.recovered", "A job-health alert ended"],
  ["endpoint.disabled", "An endpoint was disabled"],
  ["endpoint.failing", "An endpoint keeps failing"],
  ["endpoint.recovered", "An endpoint recovered"],
  ["delivery.exhausted", "A delivery used its last attempt"],
];
// A new endpoint gets the job outcomes; notifications are chosen.
const DEFAULT_EVENT_TYPES = ["job.completed", "job.failed"];
const GRACE_CHOICES = [
  [0, "End it now"],
  [3600, "1 hour"],
  [86400, "24 hours (default)"],
  [604800, "7 days"],
];

export async function listPage() {
  const page = await api.subscriptions();
  const list = h(
    "ul",
    { className: "list", "aria-label": "Endpoints" },
    page.subscriptions.map((subscription) =>
      h(
        "li",
        {},
        h("div", { className: "row" }, h("a", { href: `#/endpoints/${subscription.subscription_id}`, className: "mono" }, subscription.url), statusBadge(subscription.status)),
        h(
          "p",
          { className: "hint" },
          subscription.event_types.join(", "),
          subscription.job_names && subscription.job_names.length ? ` · jobs ${subscription.job_names.join(", ")}` : "",
          subscription.description ? ` · ${subscription.description}` : "",
        ),
      ),
    ),
  );
  show(
    h("h1", {}, "Webhook endpoints"),
    page.subscriptions.length ? list : h("p", {}, "No endpoint yet: add one below to start receiving your job events."),
    h("h2", { id: "add-heading" }, "Add an endpoint"),
    endpointForm({
      labelledBy: "add-heading",
      submitLabel: "Add endpoint",
      onSubmit: async (fields, form) => {
        const created = await api.create(fields);
        form.reset();
        showSecretThenDetail(created, "Endpoint added.");
      },
    }),
  );
}

export async function detailPage(id, reveal) {
  const subscription = await api.subscription(id);
  const testResult = h("div", { id: "test-result", "aria-live": "polite" });
  const deliveriesSection = h("section", { "aria-labelledby": "deliveries-heading" });
  const toggle = h(
    "button",
    { type: "button", className: "secondary" },
    subscription.status === "active" ? "Disable" : "Enable",
  );
  toggle.addEventListener("click", () =>
    act(async () => {
      const status = subscription.status === "active" ? "disabled" : "active";
      await api.update(id, { status });
      announce(status === "active" ? "Endpoint enabled." : "Endpoint disabled: deliveries stop.");
      await detailPage(id);
    }),
  );
  const testButton = h("button", { type: "button" }, "Send test webhook");
  testButton.addEventListener("click", () =>
    act(async () => {
      testButton.disabled = true;
      testResult.replaceChildren(h("p", {}, "Sending…"));
      try {
        testResult.replaceChildren(testCard(await api.test(id)));
      } finally {
        testButton.disabled = false;
      }
    }, testResult),
  );
  const rotateButton = h("button", { type: "button", className: "secondary" }, "Rotate secret");
  rotateButton.addEventListener("click", () => rotateDialog(id));
  const deleteButton = h("button", { type: "button", className: "danger" }, "Delete endpoint");
  deleteButton.addEventListener("click", async () => {
    const sure = await confirmDialog(
      "Delete this endpoint?",
      `Deliveries to ${subscription.url} stop at once. This cannot be undone.`,
      "Delete",
    );
    if (!sure) return;
    await act(async () => {
      await api.remove(id);
      announce("Endpoint deleted.");
      window.location.hash = "#/";
    });
  });

  show(
    h("p", {}, h("a", { href: "#/" }, "← All endpoints")),
    h("h1", {}, "Endpoint"),
    reveal || null,
    h(
      "div",
      { className: "card" },
      h("p", { className: "mono", id: "endpoint-url" }, subscription.url),
      h("p", {}, statusBadge(subscription.status), " ", subscription.disabled_reason ? `(${subscription.disabled_reason})` : ""),
      h("p", { className: "hint" }, `Id ${subscription.subscription_id} · created ${when(subscription.created_at)}`),
      h(
        "p",
        { className: "hint" },
        `Signing secrets: ${subscription.secrets.length}` +
          (subscription.secrets.length > 1 ? " (a rotation is in its grace period: both sign)" : ""),
      ),
    ),
    h("div", { className: "actions" }, testButton, rotateButton, toggle, deleteButton),
    testResult,
    h("h2", { id: "edit-heading" }, "Edit"),
    endpointForm({
      labelledBy: "edit-heading",
      values: subscription,
      submitLabel: "Save changes",
      onSubmit: async (fields) => {
        await api.update(id, fields);
        announce("Changes saved.");
        await detailPage(id);
      },
    }),
    recoverSection(id, subscription, () => loadDeliveries(id, deliveriesSection)),
    deliveriesSection,
    snippetsSection(subscription.url),
  );
  await loadDeliveries(id, deliveriesSection);
}

// Recover: every delivery since a time that did not succeed (skipped while the endpoint was
// disabled, failed, parked, gone) is sent again, page after page, with its webhook-id.
function recoverSection(id, subscription, reload) {
  const active = subscription.status === "active";
  const since = h("input", {
    id: "recover-since",
    name: "since",
    type: "datetime-local",
    step: "1",
    required: true,
    "aria-describedby": "recover-hint",
    value: localInputValue(new Date(Date.now() - 24 * 3600 * 1000)),
  });
  const result = h("div", { id: "recover-result", "aria-live": "polite" });
  const run = h("button", { type: "button", className: "secondary", disabled: !active }, "Recover");
  run.addEventListener("click", () =>
    act(async () => {
      const moment = new Date(since.value);
      if (!since.value || Number.isNaN(moment.getTime())) {
        since.setAttribute("aria-invalid", "true");
        result.replaceChildren(h("p", { className: "error" }, "Since: enter the time the outage began."));
        since.focus();
        return;
      }
      since.removeAttribute("aria-invalid");
      run.disabled = true;
      let sent = 0;
      let cursor = null;
      const byStatus = {};
      try {
        do {
          const page = await api.recover(id, moment.toISOString(), cursor);
          sent += page.sent;
          for (const [status, count] of Object.entries(page.by_status)) byStatus[status] = (byStatus[status] || 0) + count;
          cursor = page.next_cursor;
          result.replaceChildren(h("p", {}, `Recovering: ${sent} sent so far…`));
        } while (cursor);
      } finally {
        run.disabled = false;
      }
      const counted = Object.entries(byStatus).map(([status, count]) => `${count} ${status}`).join(", ");
      const message = sent ? `Recovery queued: ${sent} sent again (${counted}).` : "Nothing to recover since then.";
      result.replaceChildren(h("p", {}, message));
      announce(message);
      await reload();
    }, result),
  );
  return h(
    "section",
    { "aria-labelledby": "recover-heading" },
    h("h2", { id: "recover-heading" }, "Recover missed deliveries"),
    h(
      "p",
      { id: "recover-hint", className: "hint" },
      active
        ? "Sends again, oldest first, every delivery since this time that did not succeed, including those skipped while the endpoint was disabled. Each keeps its webhook-id, so your receiver can drop what it already has."
        : "Enable the endpoint first: its events are kept as skipped deliveries meanwhile.",
    ),
    h("div", { className: "field" }, h("label", { for: "recover-since" }, "Since (your local time)"), since),
    h("div", { className: "actions" }, run),
    result,
  );
}

// A datetime-local value (local time, no zone) for `moment`.
function localInputValue(moment) {
  const pad = (n) => String(n).padStart(2, "0");
  return (
    `${moment.getFullYear()}-${pad(moment.getMonth() + 1)}-${pad(moment.getDate())}` +
    `T${pad(moment.getHours())}:${pad(moment.getMinutes())}:${pad(moment.getSeconds())}`
  );
}

async function loadDeliveries(id, section, cursor) {
  const page = await api.deliveries(id, cursor);
  const heading = h("h2", { id: "deliveries-heading" }, "Deliveries (newest first)");
  const refresh = h("button", { type: "button", className: "secondary" }, "Refresh");
  refresh.addEventListener("click", () => act(() => loadDeliveries(id, section)));
  const items = page.deliveries.map((delivery) => deliveryItem(delivery));
  const more = page.next_cursor ? h("button", { type: "button", className: "secondary" }, "Older deliveries") : null;
  if (more) more.addEventListener("click", () => act(() => loadDeliveries(id, section, page.next_cursor)));
  section.replaceChildren(
    heading,
    h("div", { className: "actions" }, refresh),
    items.length ? h("ul", { className: "list", "aria-label": "Deliveries" }, items) : h("p", {}, "No delivery yet."),
    more,
  );
}

function deliveryItem(delivery) {
  const last = delivery.last_attempt;
  const detailsId = `attempts-${delivery.delivery_id}`;
  const details = h("div", { id: detailsId, hidden: true });
  const showButton = h("button", { type: "button", className: "secondary", "aria-expanded": "false", "aria-controls": detailsId }, "Show attempts");
  showButton.addEventListener("click", () =>
    act(async () => {
      const open = showButton.getAttribute("aria-expanded") === "true";
      if (open) {
        details.hidden = true;
        showButton.setAttribute("aria-expanded", "false");
        showButton.textContent = "Show attempts";
        return;
      }
      const detail = await api.delivery(delivery.delivery_id);
      details.replaceChildren(attemptsTable(detail.attempts));
      details.hidden = false;
      showButton.setAttribute("aria-expanded", "true");
      showButton.textContent = "Hide attempts";
    }),
  );
  const replayButton = h("button", { type: "button", className: "secondary" }, "Replay");
  replayButton.addEventListener("click", () =>
    act(async () => {
      const replayed = await api.replay(delivery.delivery_id);
      announce(`Replay queued for ${replayed.event_id}.`);
    }),
  );
  return h(
    "li",
    { "data-delivery-id": delivery.delivery_id },
    h("div", { className: "row" }, statusBadge(delivery.status), h("span", {}, delivery.event_type || ""), h("span", { className: "hint" }, when(delivery.created_at))),
    h("p", { className: "mono hint" }, delivery.event_id),
    h("p", {}, `${delivery.attempt_count} attempt${delivery.attempt_count === 1 ? "" : "s"}`, last ? ` · last: ${attemptSummary(last)}` : ""),
    h("div", { className: "actions" }, showButton, replayButton),
    details,
  );
}

function attemptsTable(attempts) {
  return h(
    "div",
    { className: "table-wrap" },
    h(
      "table",
      {},
      h("caption", { className: "hint" }, "Every attempt, oldest first"),
      h("thead", {}, h("tr", {}, ["#", "When", "Result", "Latency", "Start of the answer"].map((name) => h("th", { scope: "col" }, name)))),
      h(
        "tbody",
        {},
        attempts.map((attempt) =>
          h(
            "tr",
            {},
            h("td", {}, String(attempt.n)),
            h("td", {}, when(attempt.at)),
            h("td", {}, attempt.status_code !== null && attempt.status_code !== undefined ? `HTTP ${attempt.status_code}` : attempt.error || ""),
            h("td", {}, attempt.latency_ms !== null && attempt.latency_ms !== undefined ? `${attempt.latency_ms} ms` : ""),
            h("td", { className: "mono" }, attempt.response || ""),
          ),
        ),
      ),
    ),
  );
}

function attemptSummary(attempt) {
  const result = attempt.status_code !== null && attempt.status_code !== undefined ? `HTTP ${attempt.status_code}` : attempt.error || "no answer";
  return attempt.latency_ms !== null && attempt.latency_ms !== undefined ? `${result} in ${attempt.latency_ms} ms` : result;
}

function testCard(result) {
  const outcome = result.delivered
    ? `Delivered: HTTP ${result.status_code} in ${result.latency_ms} ms`
    : `Not delivered: ${result.status_code ? `HTTP ${result.status_code}` : result.detail || result.error} (${result.latency_ms} ms)`;
  return h(
    "div",
    { className: "card" },
    h("h3", {}, "Test webhook"),
    h("p", {}, statusBadge(result.delivered ? "succeeded" : "failed"), " ", outcome),
    h("p", { className: "hint" }, `webhook-id ${result.webhook_id}, signed ${result.signatures} time${result.signatures === 1 ? "" : "s"}`),
    result.response_excerpt ? h("pre", {}, result.response_excerpt) : null,
  );
}

function endpointForm({ labelledBy, values, submitLabel, onSubmit }) {
  const prefix = values ? "edit" : "add";
  const error = h("p", { id: `${prefix}-error`, className: "error", "aria-live": "assertive" });
  const url = h("input", {
    id: `${prefix}-url`,
    name: "url",
    type: "url",
    required: true,
    inputmode: "url",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "https://hooks.example.com/fetcher",
    "aria-describedby": `${prefix}-url-hint ${prefix}-error`,
    value: values ? values.url : undefined,
  });
  const description = h("input", {
    id: `${prefix}-description`,
    name: "description",
    type: "text",
    maxlength: "256",
    value: values && values.description ? values.description : undefined,
  });
  const jobNames = h("input", {
    id: `${prefix}-job-names`,
    name: "job_names",
    type: "text",
    spellcheck: "false",
    autocomplete: "off",
    placeholder: "billing-*, nightly-report",
    "aria-describedby": `${prefix}-job-names-hint`,
    value: values && values.job_names ? values.job_names.join(", ") : undefined,
  });
  const boxes = EVENT_TYPES.map(([type, label]) =>
    h("input", { type: "checkbox", name: "event_types", value: type, id: `${prefix}-${type}`, checked: values ? values.event_types.includes(type) : DEFAULT_EVENT_TYPES.includes(type) }),
  );
  const form = h(
    "form",
    { "aria-labelledby": labelledBy, novalidate: true },
    h(
      "div",
      { className: "field" },
      h("label", { for: `${prefix}-url` }, "Endpoint URL"),
      url,
      h("p", { id: `${prefix}-url-hint`, className: "hint" }, "An https URL your servers answer on; it must resolve to a public address."),
    ),
    h(
      "fieldset",
      {},
      h("legend", {}, "Events to receive"),
      EVENT_TYPES.map(([type, label], index) => h("div", { className: "choice" }, boxes[index], h("label", { for: `${prefix}-${type}` }, `${label} (${type})`))),
    ),
    h(
      "div",
      { className: "field" },
      h("label", { for: `${prefix}-job-names` }, "Only these jobs (optional)"),
      jobNames,
      h("p", { id: `${prefix}-job-names-hint`, className: "hint" }, "Job names or patterns such as billing-*, separated by commas; empty: every job."),
    ),
    h("div", { className: "field" }, h("label", { for: `${prefix}-description` }, "Description (optional)"), description),
    error,
    h("button", { type: "submit" }, submitLabel),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    url.removeAttribute("aria-invalid");
    const fields = {
      url: url.value.trim(),
      event_types: boxes.filter((box) => box.checked).map((box) => box.value),
      job_names: jobNames.value.split(",").map((name) => name.trim()).filter((name) => name),
      description: description.value.trim(),
    };
    if (!fields.url) {
      return fail("Endpoint URL: enter the URL webhooks go to.", url);
    }
    if (!fields.event_types.length) {
      return fail("Events to receive: choose at least one.", boxes[0]);
    }
    if (!values && !fields.description) delete fields.description;
    try {
      await onSubmit(fields, form);
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      if (failure.status === 401 || failure.status === 403) return sessionOver(failure);
      fail(failure.message, failure.field === "url" ? url : null);
    }
  });

  function fail(message, input) {
    error.textContent = message;
    if (input) {
      if (input === url) url.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }

  return form;
}

function rotateDialog(id) {
  const select = h(
    "select",
    { id: "grace", name: "grace" },
    GRACE_CHOICES.map(([seconds, label]) => h("option", { value: String(seconds), selected: seconds === 86400 }, label)),
  );
  const dialog = h(
    "dialog",
    { "aria-labelledby": "rotate-title" },
    h("h2", { id: "rotate-title" }, "Rotate the signing secret"),
    h("p", {}, "A new secret signs from now on. The current one keeps signing during the grace period, so your receiver can switch without losing a webhook."),
    h("div", { className: "field" }, h("label", { for: "grace" }, "Keep the current secret signing for"), select),
  );
  const cancel = h("button", { type: "button", className: "secondary" }, "Cancel");
  const rotate = h("button", { type: "button" }, "Rotate");
  dialog.append(h("div", { className: "actions" }, cancel, rotate));
  const close = () => {
    dialog.close();
    dialog.remove();
  };
  cancel.addEventListener("click", close);
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    close();
  });
  rotate.addEventListener("click", async () => {
    close();
    await act(async () => {
      const rotated = await api.rotate(id, Number(select.value));
      showSecretThenDetail(rotated, "Secret rotated.");
    });
  });
  document.body.append(dialog);
  dialog.showModal();
  select.focus();
}

function showSecretThenDetail(subscription, message) {
  const reveal = h(
    "section",
    { className: "card secret", "aria-labelledby": "secret-heading" },
    h("h2", { id: "secret-heading" }, "Signing secret"),
    h("p", {}, "Copy it now and store it in your receiver's configuration: it is shown this once, never again."),
    h("code", { id: "secret-value" }, subscription.secret),
    h("div", { className: "actions" }, copyButton("Copy secret", subscription.secret)),
  );
  announce(message);
  window.history.replaceState(null, "", `#/endpoints/${subscription.subscription_id}`);
  return act(() => detailPage(subscription.subscription_id, reveal));
}

function snippetsSection(url) {
  const python = pythonSnippet(url);
  const node = nodeSnippet(url);
  return h(
    "section",
    { "aria-labelledby": "verify-heading" },
    h("h2", { id: "verify-heading" }, "Verify the webhooks you receive"),
    h("p", {}, "Every webhook is signed per the Standard Webhooks specification; these libraries check it."),
    h("h3", {}, "Python"),
    h("pre", { tabindex: "0", "aria-label": "Python example" }, h("code", {}, python)),
    h("div", { className: "actions" }, copyButton("Copy Python example", python)),
    h("h3", {}, "Node.js"),
    h("pre", { tabindex: "0", "aria-label": "Node.js example" }, h("code", {}, node)),
    h("div", { className: "actions" }, copyButton("Copy Node.js example", node)),
  );
}

export function statusBadge(status) {
  const tone = { active: "good", succeeded: "good", pending: "warn", skipped: "warn", disabled: "muted", failed: "bad", parked: "bad", gone: "bad" }[status] || "muted";
  return h("span", { className: `badge ${tone}` }, status);
}

// Runs one user action; shows what went wrong instead of failing silently.
export async function act(work, where) {
  try {
    return await work();
  } catch (failure) {
    if (failure instanceof ApiError && (failure.status === 401 || failure.status === 403)) return sessionOver(failure);
    const message = failure instanceof ApiError ? failure.message : "Something went wrong; reload the page and try again.";
    if (where) where.replaceChildren(h("p", { className: "error" }, message));
    announce(message);
    return undefined;
  }
}

export function sessionOver(failure) {
  document.getElementById("nav").hidden = true;
  show(
    h("h1", {}, "Your portal session has ended"),
    h("p", {}, "It expired or was ended by your operator. Ask them for a new portal link."),
    failure && failure.code === "portal_header_required" ? h("p", { className: "hint" }, failure.message) : null,
  );
}
