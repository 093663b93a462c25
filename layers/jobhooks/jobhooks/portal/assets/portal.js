// The tenant portal's page: opens the session from the one-time link, then shows the tenant's
// endpoints, their deliveries and its job health. docs/portal.md describes what it does.
//
// The link's token arrives in the URL fragment (#t=...), which browsers never send to a
// server, nor put in a Referer. It is removed from the address bar before anything else runs,
// then sent once, in a header, to be exchanged for an HttpOnly session cookie.
import { alertsSection } from "./alerts.js";
import { api, ApiError } from "./api.js";
import { jobHealthCharts, jobHealthTable } from "./chart.js";
import { announce, confirmDialog, h, show, when } from "./dom.js";
import { act, detailPage, listPage, sessionOver } from "./endpoints.js";

let signedIn = false;

function tokenInHash() {
  return new URLSearchParams(window.location.hash.slice(1)).get("t");
}

async function start() {
  const token = tokenInHash();
  if (token !== null) {
    window.history.replaceState(null, "", `${window.location.pathname}#/`);
    if (await keepsOpenSession(token)) return startSession();
    signedIn = false;
    try {
      await api.openSession(token);
    } catch (failure) {
      return linkRefused(failure, token);
    }
  }
  return startSession();
}

// Login CSRF: a link of another tenant, opened while a session is open (sent by someone else,
// perhaps, to make this person work in their tenant), switches tenants only when they say so.
// Declined, the link stays unused and the open session goes on.
async function keepsOpenSession(token) {
  const linked = linkClaims(token);
  if (!linked || typeof linked.t !== "string") return false;
  let open;
  try {
    open = await api.session();
  } catch (failure) {
    return false;
  }
  if (!open || open.tenant_id === linked.t) return false;
  const switching = await confirmDialog(
    `Switch to tenant ${linked.t}?`,
    `You are signed in to tenant ${open.tenant_id}. This link opens the portal of tenant ${linked.t} instead. Switch only if you asked for this link: a link someone sent you unasked could make you add endpoints to their tenant.`,
    `Switch to ${linked.t}`,
  );
  if (!switching) announce(`Still in tenant ${open.tenant_id}; the link was not used.`);
  return !switching;
}

async function startSession() {
  let session;
  try {
    session = await api.session();
  } catch (failure) {
    if (failure instanceof ApiError && (failure.status === 401 || failure.status === 403)) {
      return noSession();
    }
    throw failure;
  }
  const tenant = document.getElementById("tenant");
  tenant.textContent = `Tenant ${session.tenant_id} · this session ends ${when(session.expires_at)}`;
  tenant.hidden = false;
  document.getElementById("nav").hidden = false;
  signedIn = true;
  await route();
}

// A link pasted into an open portal changes the fragment only: no new page load.
window.addEventListener("hashchange", () => {
  if (tokenInHash() !== null) return start().catch(failed);
  if (signedIn) return route();
  return undefined;
});
document.getElementById("sign-out").addEventListener("click", signOut);

async function route() {
  const path = window.location.hash.replace(/^#/, "") || "/";
  const endpoint = path.match(/^\/endpoints\/(sub_[A-Za-z0-9_-]+)$/);
  if (endpoint) return act(() => detailPage(endpoint[1]));
  if (path === "/analytics") return act(analyticsPage);
  return act(listPage);
}

async function analyticsPage() {
  const days = 14;
  const [report, alerts] = await Promise.all([api.jobHealth(days), alertsSection(() => act(analyticsPage))]);
  const heading = h("h1", {}, "Job health");
  if (!report.configured) {
    return show(heading, h("p", {}, "Analytics is not configured on this deployment, so there is no job health to show."), ...alerts);
  }
  if (report.pending) {
    return show(heading, h("p", {}, report.note || "Still computing; try again in a minute."), ...alerts);
  }
  const window_ = h("p", { className: "hint" }, `Your jobs' outcomes from ${when(report.window_from)} to ${when(report.window_to)} (UTC days).`);
  if (!report.points.length) {
    return show(heading, window_, h("p", {}, report.note || "No outcome in this window."), ...alerts);
  }
  return show(heading, window_, jobHealthCharts(report.points), jobHealthTable(report.points), ...alerts);
}

async function signOut() {
  await act(async () => {
    await api.signOut();
    signedIn = false;
    document.getElementById("nav").hidden = true;
    document.getElementById("tenant").hidden = true;
    show(h("h1", {}, "Signed out"), h("p", {}, "Your session has ended. Open a new portal link to come back."));
    announce("Signed out.");
  });
}

function linkRefused(failure, token) {
  if (!(failure instanceof ApiError)) throw failure;
  let title = "This portal link cannot be opened";
  let reason = "It is not valid: it may have been cut short when copied, changed, or revoked by your operator.";
  if (failure.code === "link_used") {
    title = "This portal link was already used";
    reason = "A portal link opens the portal once. If that was not you, tell your operator.";
  } else if (linkExpired(token)) {
    title = "This portal link has expired";
    reason = "Portal links are valid for a short time only.";
  } else if (failure.status >= 500 || failure.status === 0) {
    title = "The portal is not available right now";
    reason = "Try the same link again in a minute; it has not been used.";
  }
  document.title = `${title} · jobhooks portal`;
  show(h("h1", {}, title), h("p", {}, reason), h("p", {}, "Ask your operator for a new portal link."));
}

// The link's claims are readable (only its MAC is secret): its tenant, its expiry.
function linkClaims(token) {
  try {
    const encoded = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (failure) {
    return null;
  }
}

// Say plainly when a link expired.
function linkExpired(token) {
  const claims = linkClaims(token);
  return Boolean(claims) && typeof claims.e === "number" && claims.e * 1000 <= Date.now();
}

function noSession() {
  sessionOver(null);
  show(
    h("h1", {}, "Open the portal from your link"),
    h("p", {}, "This page needs the one-time portal link your operator gave you, or your session has ended. Ask them for a new link."),
  );
}

function failed() {
  show(h("h1", {}, "Something went wrong"), h("p", {}, "Reload the page; if it keeps failing, ask your operator."));
}

start().catch(failed);
