// Small tools over text, as an outside author writes a component in JavaScript: the world's exported functions,
// with the values componentize-js gives them (records as objects, enums as strings, flags as objects of booleans,
// variants as { tag, val }); a `result`'s err is what the function throws.

const words = (text) => text.split(/\s+/).filter((w) => w.length > 0);

export function stats(text) {
  const all = words(text);
  const longest = all.reduce((best, w) => (best === undefined || w.length > best.length ? w : best), undefined);
  return { words: all.length, lines: text.length === 0 ? 0 : text.split("\n").length, longest };
}

export function recase(text, style) {
  switch (style) {
    case "upper":
      return text.toUpperCase();
    case "lower":
      return text.toLowerCase();
    default:
      return text.replace(/\w\S*/g, (w) => w[0].toUpperCase() + w.slice(1).toLowerCase());
  }
}

export function find(text, pattern, limit) {
  const found = [];
  const max = limit ?? Infinity;
  const matches = (at) => {
    if (pattern.tag === "literal") return text.startsWith(pattern.val, at) && pattern.val.length > 0 ? pattern.val.length : 0;
    if (pattern.tag === "any-digit") return /[0-9]/.test(text[at]) ? 1 : 0;
    return pattern.val.includes(text[at]) ? 1 : 0;
  };
  for (let at = 0; at < text.length && found.length < max; at++) {
    const length = matches(at);
    if (length > 0) {
      found.push([at, at + length]);
      at += length - 1;
    }
  }
  return found;
}

export function split(text, separator, trim) {
  if (separator.length === 0) throw "the separator is empty";
  return text.split(separator).map((piece) => {
    let p = piece;
    if (trim.start) p = p.trimStart();
    if (trim.end) p = p.trimEnd();
    return p;
  });
}
