// Small DOM helpers. Text always goes in as text (textContent), never as markup: every value
// shown here (URLs, descriptions, receiver answers) comes from somewhere else.

export function h(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "className") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

export function svg(tag, attributes, ...children) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value !== undefined && value !== null) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

let statusTimer;

export function announce(message) {
  const region = document.getElementById("status");
  region.textContent = "";
  // A fresh text node, so screen readers announce a repeated message again.
  window.setTimeout(() => {
    region.textContent = message;
  }, 50);
  window.clearTimeout(statusTimer);
  statusTimer = window.setTimeout(() => {
    region.textContent = "";
  }, 8000);
}

export function show(...children) {
  const main = document.getElementById("main");
  main.replaceChildren(...children.flat().filter(Boolean));
  main.focus();
}

export function when(iso) {
  if (!iso) return "";
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime()) ? iso : moment.toLocaleString();
}

export function copyButton(label, text) {
  const button = h("button", { type: "button", className: "secondary" }, label);
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      announce("Copied.");
    } catch (failure) {
      announce("Copying is not allowed here: select the text and copy it yourself.");
    }
  });
  return button;
}

// A modal confirmation (the native <dialog>: focus stays inside, Escape cancels).
export function confirmDialog(title, text, confirmLabel) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { "aria-labelledby": "dialog-title" },
      h("h2", { id: "dialog-title" }, title),
      h("p", {}, text),
    );
    const cancel = h("button", { type: "button", className: "secondary" }, "Cancel");
    const confirm = h("button", { type: "button", className: "danger" }, confirmLabel);
    dialog.append(h("div", { className: "actions" }, cancel, confirm));
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    cancel.addEventListener("click", () => done(false));
    confirm.addEventListener("click", () => done(true));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}
