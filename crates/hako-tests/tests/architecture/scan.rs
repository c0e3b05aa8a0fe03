//! One Rust file as the shape checks read it: its code with comments and
//! literals blanked, its test modules cut out, its `mod NAME;`
//! declarations, and the paths it names.

/// A Rust file, read.
pub struct Source {
    /// The code: comments, string and char literals and the bodies of
    /// `#[cfg(test)]` modules blanked to spaces, so that it has the text's
    /// length and lines.
    pub code: String,
    /// Lines that count towards the size limit: the test modules aside.
    pub lines: usize,
    /// The `mod NAME;` declarations (modules in files of their own).
    pub mods: Vec<ModDecl>,
}

/// `mod NAME;`, with its `#[path = "..."]` if it has one.
pub struct ModDecl {
    pub name: String,
    pub path: Option<String>,
    /// Under `#[cfg(test)]` or `#[cfg(all(test, ...))]`: the file and the
    /// files below it are tests (not read for imports).
    pub test: bool,
}

impl Source {
    pub fn parse(text: &str) -> Source {
        let mut code = blank(text).into_bytes();
        let mut lines = text.lines().count();
        let mut mods = Vec::new();
        let mut from = 0;
        while let Some(m) = next_mod(&code, from) {
            from = m.end;
            let spans = attributes(&code, m.start);
            let attrs: Vec<&str> = spans.iter().map(|&(a, z)| &text[a..z]).collect();
            let test = attrs.iter().any(|a| is_test_cfg(a));
            match m.body {
                Some(open) if test => {
                    // A test module: blanked, and its lines not counted.
                    let close = matching(&code, open).unwrap_or(code.len() - 1);
                    let first = spans.last().map_or(m.start, |s| s.0);
                    let line_start = code[..first].iter().rposition(|&c| c == b'\n');
                    let line_start = line_start.map_or(0, |k| k + 1);
                    let line_end = code[close..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(code.len(), |k| close + k + 1);
                    lines -= text[line_start..line_end].lines().count();
                    for c in &mut code[first..=close] {
                        if *c != b'\n' {
                            *c = b' ';
                        }
                    }
                    from = close + 1;
                }
                Some(_) => {}
                None => mods.push(ModDecl {
                    name: m.name,
                    path: attrs.iter().find_map(|a| path_attribute(a)),
                    test,
                }),
            }
        }
        let code = String::from_utf8(code).expect("blanking keeps UTF-8");
        Source { code, lines, mods }
    }
}

/// The text with comments and the insides of string and char literals
/// turned to spaces (line breaks kept): same length, same lines.
pub fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut wipe = |from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let starts_token = i == 0 || !is_ident(b[i - 1]);
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |k| i + k);
            wipe(i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut j, mut depth) = (i + 2, 1);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            wipe(i, j);
            i = j;
        } else if let Some(hashes) = raw_string_at(b, i).filter(|_| starts_token) {
            // r"..", r#".."#, br"..": no escapes inside.
            let open = i + b[i..].iter().position(|&c| c == b'"').unwrap_or(0);
            let close = format!("\"{}", "#".repeat(hashes)).into_bytes();
            let end = find(b, open + 1, &close).unwrap_or(b.len());
            wipe(open + 1, end);
            i = end + close.len();
        } else if b[i] == b'\'' {
            i = match char_literal_end(text, i) {
                Some(end) => {
                    wipe(i + 1, end - 1);
                    end
                }
                None => i + 1, // a lifetime or a label
            };
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            wipe(i + 1, j);
            i = j + 1;
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only whole characters are blanked")
}

/// The number of `#` of a raw string starting at `i` (`r"`, `r#"`, `br"`).
fn raw_string_at(b: &[u8], i: usize) -> Option<usize> {
    let j = match b[i] {
        b'r' => i + 1,
        b'b' if b.get(i + 1) == Some(&b'r') => i + 2,
        _ => return None,
    };
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + hashes) == Some(&b'"')).then_some(hashes)
}

/// The end (past the closing quote) of a char literal at `i`, if it is one.
fn char_literal_end(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'\\') {
        // '\n', '\'', '\u{1F600}'
        return (i + 3..b.len().min(i + 14))
            .find(|&k| b[k] == b'\'')
            .map(|k| k + 1);
    }
    let c = text.get(i + 1..)?.chars().next()?;
    let end = i + 1 + c.len_utf8();
    (c != '\'' && b.get(end) == Some(&b'\'')).then_some(end + 1)
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    (from..b.len()).find(|&k| b[k..].starts_with(needle))
}

/// A `mod NAME` item: where its `mod` starts, where it ends, and the
/// opening brace of an inline module.
struct ModItem {
    start: usize,
    end: usize,
    name: String,
    body: Option<usize>,
}

fn next_mod(code: &[u8], from: usize) -> Option<ModItem> {
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = from;
    while let Some(k) = find(code, i, b"mod") {
        i = k + 3;
        if (k > 0 && (is_ident(code[k - 1]) || code[k - 1] == b':'))
            || !code.get(k + 3).is_some_and(|c| c.is_ascii_whitespace())
        {
            continue;
        }
        let mut j = k + 3;
        while code.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
            j += 1;
        }
        let name_start = j;
        while code.get(j).is_some_and(|&c| is_ident(c)) {
            j += 1;
        }
        if j == name_start {
            continue;
        }
        let name = String::from_utf8_lossy(&code[name_start..j]).into_owned();
        while code.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
            j += 1;
        }
        let body = match code.get(j) {
            Some(b';') => None,
            Some(b'{') => Some(j),
            _ => continue,
        };
        return Some(ModItem {
            start: k,
            end: j + 1,
            name,
            body,
        });
    }
    None
}

/// The closing brace of the one at `open`.
fn matching(code: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Skips whitespace and a visibility (`pub`, `pub(crate)`) backwards from
/// the item's keyword at `at`.
fn skip_visibility(code: &[u8], at: usize) -> usize {
    let back_ws = |mut j: usize| {
        while j > 0 && code[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        j
    };
    let mut j = back_ws(at);
    if j > 0 && code[j - 1] == b')' {
        let mut depth = 0;
        let mut k = j;
        while k > 0 {
            k -= 1;
            match code[k] {
                b')' => depth += 1,
                b'(' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        if code[..k].ends_with(b"pub") {
            j = k;
        }
    }
    if code[..j].ends_with(b"pub") {
        j -= 3;
    }
    back_ws(j)
}

/// The outer attributes (`#[...]`) of the item whose keyword is at `at`,
/// as ranges of the code, nearest first.
fn attributes(code: &[u8], at: usize) -> Vec<(usize, usize)> {
    let mut attrs = Vec::new();
    let mut j = skip_visibility(code, at);
    while j > 0 && code[j - 1] == b']' {
        let mut depth = 0;
        let mut k = j;
        while k > 0 {
            k -= 1;
            match code[k] {
                b']' => depth += 1,
                b'[' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        if k == 0 || code[k - 1] != b'#' {
            break; // an inner attribute (`#![...]`), or no attribute
        }
        attrs.push((k - 1, j));
        j = k - 1;
        while j > 0 && code[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
    }
    attrs
}

fn is_test_cfg(attr: &str) -> bool {
    let a: String = attr.split_whitespace().collect();
    a.starts_with("#[cfg(test)") || a.starts_with("#[cfg(all(test")
}

fn path_attribute(attr: &str) -> Option<String> {
    let rest = attr.strip_prefix("#[")?.trim_start().strip_prefix("path")?;
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// Every path of a `use` item (groups expanded), every inline path that
/// starts with `crate::`, `super::` or `self::`, and every inline path that
/// starts with the name of one of `children` (the file's own file modules,
/// which a path in it names before any crate of that name). The path of a
/// `pub(in ...)` is a visibility, not an import.
pub fn paths_in(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // `use` items, read whole (and not again below).
    let mut items = Vec::new();
    let mut i = 0;
    while let Some(k) = code[i..].find("use ") {
        let at = i + k;
        i = at + 4;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        if let Some(end) = code[i..].find(';') {
            let tree = code[i..i + end].trim_start();
            if !tree.starts_with("::") {
                expand(tree, &mut Vec::new(), &mut out);
            }
            items.push((at, i + end));
        }
    }
    let mut i = 0;
    while i < b.len() {
        if let Some(&(_, end)) = items.iter().find(|(a, _)| *a == i) {
            i = end;
            continue;
        }
        let free = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':' || b[i - 1] == b'.');
        let named = free
            && (["crate::", "super::", "self::"]
                .iter()
                .any(|s| code[i..].starts_with(s))
                || children.iter().any(|c| {
                    code[i..].starts_with(c.as_str()) && code[i + c.len()..].starts_with("::")
                }));
        if named && !code[..i].trim_end().ends_with("(in") {
            let end = path_end(code, i);
            expand(&code[i..end], &mut Vec::new(), &mut out);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// End of the path (or use tree) that starts at `i`.
fn path_end(code: &str, i: usize) -> usize {
    let b = code.as_bytes();
    let mut j = i;
    let mut depth = 0;
    while j < b.len() {
        let c = b[j];
        if c == b'{' {
            depth += 1;
        } else if c == b'}' {
            if depth == 0 {
                break;
            }
            depth -= 1;
            if depth == 0 {
                return j + 1;
            }
        } else if depth == 0 && !(c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
            break;
        }
        j += 1;
    }
    j
}

/// Expands a use tree such as `a::{b, c::{d}}` into paths, after `prefix`.
pub fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let (head, group) = match tree.find('{') {
        Some(k) => (
            &tree[..k],
            Some(&tree[k + 1..tree.rfind('}').unwrap_or(tree.len())]),
        ),
        None => (tree, None),
    };
    let before = prefix.len();
    prefix.extend(
        head.split("::")
            .map(|s| s.split_whitespace().next().unwrap_or("").to_owned())
            .filter(|s| !s.is_empty()),
    );
    match group {
        None => out.push(prefix.clone()),
        Some(g) => {
            for part in split_top(g) {
                if part.trim() == "self" {
                    out.push(prefix.clone());
                } else if !part.trim().is_empty() {
                    expand(part, prefix, out);
                }
            }
        }
    }
    prefix.truncate(before);
}

/// Splits at commas outside braces.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}
