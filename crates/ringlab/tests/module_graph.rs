//! No import cycles between the files of a crate: every `crate::` and
//! `super::` path in a file's non-test code (each item of a `use` group
//! too) is an edge from that file's module to the module it names, and the
//! graph must have no cycle. (A module directory's children naming their
//! parent with `super::` is the usual layout, not counted; siblings naming
//! each other through `super::` are.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name (`engines::uring`, `plan`) -> its source without tests.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let name = rel
                .to_string_lossy()
                .trim_end_matches("/mod")
                .replace('/', "::");
            let text = std::fs::read_to_string(&p).unwrap();
            // Comments (doc links to siblings) are no imports.
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(if name == "lib" { String::new() } else { name }, code);
        }
    }
    out
}

/// The paths a `use`/path at `code[i..]` names: `a::b` or, for a group,
/// each item of `{a, b::c}` (nested groups by their prefix).
fn paths_at(code: &str) -> Vec<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let head: String = code.chars().take_while(|c| ident(*c)).collect();
    let rest = &code[head.len()..];
    if !rest.starts_with('{') {
        return vec![head];
    }
    let mut depth = 0;
    let mut items = Vec::new();
    let mut cur = String::new();
    for c in rest.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    items.push(std::mem::take(&mut cur));
                    break;
                }
            }
            ',' if depth == 1 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    items
        .iter()
        .map(|it| {
            let it: String = it.trim().chars().take_while(|c| ident(*c)).collect();
            format!("{head}{it}")
        })
        .collect()
}

fn parent(m: &str) -> String {
    match m.rfind("::") {
        Some(i) => m[..i].to_string(),
        None => String::new(),
    }
}

/// Edges from each file's module to the modules it names through
/// `crate::` and `super::` paths (`use super::{a, b}` groups included).
fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for (m, code) in mods {
        let mut to = BTreeSet::new();
        let mut named: Vec<Vec<String>> = Vec::new();
        for (i, _) in code.match_indices("crate::") {
            // Not the tail of another path (`ringlab_lab::crate::` is none,
            // but `$crate::` in macros is).
            if code[..i].ends_with('$') {
                continue;
            }
            for p in paths_at(&code[i + 7..]) {
                named.push(
                    p.split("::")
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                );
            }
        }
        for (i, _) in code.match_indices("super::") {
            // Only the first `super::` of a chain (`super::super::x`).
            if code[..i].ends_with("::") {
                continue;
            }
            let mut base = parent(m);
            let mut rest = &code[i + 7..];
            while let Some(r) = rest.strip_prefix("super::") {
                base = parent(&base);
                rest = r;
            }
            for p in paths_at(rest) {
                let mut parts: Vec<String> = base
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                parts.extend(p.split("::").filter(|s| !s.is_empty()).map(String::from));
                named.push(parts);
            }
        }
        let up = parent(m);
        for parts in named {
            // The longest prefix that is a file.
            let target = (1..=parts.len())
                .rev()
                .map(|n| parts[..n].join("::"))
                .find(|c| mods.contains_key(c));
            // A child naming its parent (`super::Goal`) is the usual layout.
            if let Some(t) = target.filter(|t| t != m && !m.is_empty() && *t != up) {
                to.insert(t);
            }
        }
        g.insert(m.clone(), to);
    }
    g
}

/// One cycle, if the graph has any.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        stack.push(v.to_string());
        for w in &g[v] {
            match state.get(w).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == w).unwrap();
                    return Some(stack[at..].to_vec());
                }
                0 => {
                    if let Some(c) = visit(w, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in g.keys() {
        if state.get(v).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_import_cycles_between_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in [
        "ringlab-core",
        "ringlab-io",
        "ringlab-net",
        "ringlab-stats",
        "ringlab-kstat",
        "ringlab-lab",
    ] {
        let g = edges(&modules(&root.join(krate).join("src")));
        if let Some(c) = find_cycle(&g) {
            panic!(
                "{krate}: files import each other in a cycle: {}",
                c.join(" -> ")
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut mods = BTreeMap::new();
    mods.insert("a".to_string(), "use crate::b::X;".to_string());
    mods.insert("b".to_string(), "fn f() { crate::c::g() }".to_string());
    mods.insert("c".to_string(), "use crate::a;".to_string());
    mods.insert("d".to_string(), "use crate::a;".to_string());
    let c = find_cycle(&edges(&mods)).expect("a -> b -> c -> a");
    assert_eq!(c.len(), 3, "{c:?}");
    mods.insert("c".to_string(), "use crate::d;".to_string());
    mods.insert("d".to_string(), String::new());
    assert_eq!(find_cycle(&edges(&mods)), None);
    // Siblings through super::, in a use group: a cycle too.
    let mut mods = BTreeMap::new();
    mods.insert("x".to_string(), "pub mod a; pub mod b;".to_string());
    mods.insert("x::a".to_string(), "use super::{b::B, Goal};".to_string());
    mods.insert("x::b".to_string(), "fn f() { super::a::g() }".to_string());
    let c = find_cycle(&edges(&mods)).expect("x::a -> x::b -> x::a");
    assert_eq!(c.len(), 2, "{c:?}");
    mods.insert("x::b".to_string(), "use super::Goal;".to_string());
    assert_eq!(
        find_cycle(&edges(&mods)),
        None,
        "naming the parent is no edge"
    );
}
