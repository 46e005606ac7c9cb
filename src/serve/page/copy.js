// An answer copied to paste elsewhere (a ticket, a chat): as Markdown or as plain text, with
// each citation as its page on the published docs when the server knows it ([site]), else as
// its path. Built from the answer's text and the server's safe nodes; nothing is parsed as HTML.

// The document types the index reads, as render.js finds citations in text.
const CITATION = /docs\/[A-Za-z0-9_.\/-]+\.(?:markdown|html|mdx|htm|txt|pdf|md)(?:#[A-Za-z0-9_=-]*)?/g;

// The citation a target (`docs/x.md#anchor`) names, among the answer's.
function cited(citations, target) {
  const [path, anchor] = target.split("#");
  return citations.find((c) => c.path === path && (c.anchor || "") === (anchor || "")) || null;
}

// What a citation is, pasted: its URL, else its path.
function placeOf(citation, target) {
  return (citation && citation.url) || target;
}

// The answer as Markdown: `[docs/x.md#a]` becomes `[heading](url)`, and a list of sources ends it.
export function asMarkdown(answer) {
  const citations = answer.citations || [];
  const linked = String(answer.text || "").replace(/\]\((docs\/[A-Za-z0-9_.\/-]+\.(?:markdown|html|mdx|htm|txt|pdf|md)(?:#[A-Za-z0-9_=-]*)?)\)/g, (whole, target) => {
    const c = cited(citations, target);
    return c && c.url ? "](" + c.url + ")" : whole;
  });
  const text = linked.replace(/\[?(docs\/[A-Za-z0-9_.\/-]+\.(?:markdown|html|mdx|htm|txt|pdf|md)(?:#[A-Za-z0-9_=-]*)?)\]?/g, (whole, target) => {
    const c = cited(citations, target);
    return c && c.url ? "[" + (c.heading || target) + "](" + c.url + ")" : whole;
  });
  return (text.trim() + sourcesList(citations, (c) => (c.url ? "[" + (c.heading || c.path) + "](" + c.url + ")" : target(c)))).trim() + "\n";
}

// The answer as plain text: its nodes' words, paragraphs and list items on their own lines,
// citations as URLs; a list of sources ends it.
export function asText(answer) {
  const citations = answer.citations || [];
  const body = Array.isArray(answer.nodes) && answer.nodes.length > 0
    ? blocks(answer.nodes, citations).join("\n\n")
    : String(answer.text || "").replace(CITATION, (t) => placeOf(cited(citations, t), t));
  return (body.trim() + sourcesList(citations, (c) => (c.heading ? c.heading + ": " : "") + (c.url || target(c)))).trim() + "\n";
}

function target(c) {
  return c.path + (c.anchor ? "#" + c.anchor : "");
}

function sourcesList(citations, line) {
  if (citations.length === 0) return "";
  return "\n\nSources:\n" + citations.map((c) => "- " + line(c)).join("\n");
}

// Block nodes as text blocks.
function blocks(nodes, citations) {
  const out = [];
  for (const node of nodes || []) {
    switch (node && node.t) {
      case "list":
        out.push((node.items || []).map((item, i) => {
          const mark = node.start === undefined || node.start === null ? "- " : ((node.start | 0) + i) + ". ";
          return mark + blocks(item, citations).join(" ");
        }).join("\n"));
        break;
      case "table":
        out.push([node.head || [], ...(node.rows || [])].map((row) => row.map((cell) => inline(cell, citations)).join(" | ")).join("\n"));
        break;
      case "code": out.push(node.text || ""); break;
      case "rule": out.push("---"); break;
      case "heading": case "paragraph": case "quote":
        out.push(inline(node.children, citations));
        break;
      default: {
        const text = inline([node], citations);
        if (text.trim()) out.push(text);
      }
    }
  }
  return out;
}

// Inline nodes as one line of text.
function inline(nodes, citations) {
  let text = "";
  for (const node of nodes || []) {
    switch (node && node.t) {
      case "text": text += String(node.text || "").replace(CITATION, (t) => placeOf(cited(citations, t), t)); break;
      case "inline_code": text += node.text || ""; break;
      case "break": text += "\n"; break;
      case "section": text += placeOf(cited(citations, node.target || ""), node.target || ""); break;
      case "link": {
        const words = inline(node.children, citations);
        text += /^(https?:|mailto:)/i.test(node.href || "") && words !== node.href ? words + " (" + node.href + ")" : words;
        break;
      }
      case "image": text += node.alt ? "[image: " + node.alt + "]" : ""; break;
      case "list": case "table": case "code": case "paragraph": case "heading": case "quote":
        text += blocks([node], citations).join("\n");
        break;
      default: text += inline(node && node.children, citations);
    }
  }
  return text;
}
