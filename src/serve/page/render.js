// Answers and docs sections as elements: their Markdown comes from the server as safe nodes
// (guard::markdown), and every node becomes elements made here, with text set as textContent;
// nothing is ever parsed as HTML. A citation in text ([docs/x.md#anchor]) becomes a button that
// calls onCite(path, anchor); a `cited` node (in a section, what an answer draws on) a <mark>.

// The document types the index reads (doc_kind::EXTENSIONS), longest first.
const CITATION = /docs\/[A-Za-z0-9_.\/-]+\.(?:markdown|html|mdx|htm|txt|pdf|md)(?:#[A-Za-z0-9_=-]*)?/g;

// Node kinds that are blocks of their own.
const BLOCKS = new Set(["heading", "paragraph", "quote", "list", "code", "table", "rule"]);

// The answer into `box`: from the server's nodes when it sent them, else as text.
export function renderAnswer(box, text, nodes, onCite) {
  box.textContent = "";
  if (Array.isArray(nodes) && (nodes.length > 0 || !text)) build(nodes, box, false, onCite);
  else appendText(box, text || "", onCite);
}

// A docs section's nodes into `box` (the source panel).
export function renderNodes(box, nodes, onCite) {
  box.textContent = "";
  build(nodes, box, false, onCite);
}

// Text, with each citation a button.
function appendText(into, text, onCite) {
  let at = 0;
  for (const match of text.matchAll(CITATION)) {
    into.appendChild(document.createTextNode(text.slice(at, match.index)));
    into.appendChild(sectionButton(match[0], [{ t: "text", text: match[0] }], onCite));
    at = match.index + match[0].length;
  }
  into.appendChild(document.createTextNode(text.slice(at)));
}

function sectionButton(target, children, onCite) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "cite";
  const [path, anchor] = target.split("#");
  build(children, button, true, onCite);
  button.addEventListener("click", () => onCite(path, anchor || ""));
  return button;
}

// Elements for nodes, appended to `into`. `plain`: inside a button, no citation buttons.
function build(nodes, into, plain, onCite) {
  const make = (tag, children) => {
    const element = document.createElement(tag);
    build(children || [], element, plain, onCite);
    into.appendChild(element);
    return element;
  };
  for (const node of nodes || []) {
    switch (node && node.t) {
      case "text": if (plain) into.appendChild(document.createTextNode(node.text)); else appendText(into, node.text, onCite); break;
      case "heading": make(["h3", "h3", "h4", "h5", "h6", "h6"][Math.min(5, Math.max(0, (node.level | 0) - 1))], node.children); break;
      case "paragraph": make("p", node.children); break;
      case "quote": make("blockquote", node.children); break;
      case "strong": make("strong", node.children); break;
      case "em": make("em", node.children); break;
      case "del": make("del", node.children); break;
      case "cited": {
        // around a block (a heading, code, a loose item's paragraph) or a line of text
        const around = node.children && node.children[0] && BLOCKS.has(node.children[0].t);
        make("mark", node.children).className = around ? "cited block" : "cited";
        break;
      }
      case "break": into.appendChild(document.createElement("br")); break;
      case "rule": into.appendChild(document.createElement("hr")); break;
      case "inline_code": { const code = document.createElement("code"); code.textContent = node.text; into.appendChild(code); break; }
      case "code": {
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = node.text;
        if (node.lang) code.dataset.lang = node.lang;
        pre.appendChild(code);
        into.appendChild(pre);
        break;
      }
      case "list": {
        const list = document.createElement(node.start === undefined || node.start === null ? "ul" : "ol");
        if (list.tagName === "OL" && node.start !== 1) list.start = node.start | 0;
        for (const item of node.items || []) {
          const li = document.createElement("li");
          build(item, li, plain, onCite);
          list.appendChild(li);
        }
        into.appendChild(list);
        break;
      }
      case "table": {
        const table = document.createElement("table");
        const head = table.createTHead().insertRow();
        for (const cell of node.head || []) { const th = document.createElement("th"); build(cell, th, plain, onCite); head.appendChild(th); }
        const body = table.createTBody();
        for (const row of node.rows || []) {
          const tr = body.insertRow();
          for (const cell of row) build(cell, tr.insertCell(), plain, onCite);
        }
        into.appendChild(table);
        break;
      }
      case "section": if (plain) build(node.children, into, plain, onCite); else into.appendChild(sectionButton(node.target, node.children, onCite)); break;
      case "link": {
        // The server allowed it; the page checks the scheme once more.
        if (!/^(https?:|mailto:)/i.test(node.href || "")) { build(node.children, into, plain, onCite); break; }
        // Its text plain: a citation button inside a link would do both on one click.
        const a = document.createElement("a");
        build(node.children, a, true, onCite);
        into.appendChild(a);
        a.href = node.href;
        a.rel = "noopener noreferrer";
        a.target = "_blank";
        break;
      }
      case "blocked": {
        const span = make("span", node.children);
        span.className = "blocked";
        span.title = "link not allowed: " + node.url;
        span.appendChild(document.createTextNode(" (link not allowed: " + node.url + ")"));
        break;
      }
      case "image": {
        const span = document.createElement("span");
        span.className = "blocked";
        span.textContent = "[image not shown" + (node.alt ? ": " + node.alt : "") + "]";
        into.appendChild(span);
        break;
      }
      default: break;
    }
  }
}
