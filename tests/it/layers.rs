//! The layers ARCHITECTURE.md claims ("Layers and invariants": front doors do not import each
//! other; the scheduler (`jobs/`) sits below them and above the domain; nothing below a layer
//! imports it; no file-level import circle; the engine knows no HTTP, the codecs do no I/O),
//! checked by reading the source. A
//! server file's references are its `crate::`, `super::` and `self::` paths (grouped `use`
//! trees included), and in `lib.rs` or a `mod.rs` the paths into its own child modules; comment
//! lines and everything from `#[cfg(test)]` on are left out (unit tests may reach anywhere). A
//! `pub use` is no import of its own: a path through it leads to the file that defines the
//! name. What breaks a claim today is listed with why; a listed exception that no longer occurs
//! fails too, so the lists only shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The front doors: no module of one references a module of another.
const DOORS: [&[&str]; 4] = [&["api"], &["web"], &["dav"], &["cli", "backup_cli", "bundle_cli", "import_cli", "main"]];
/// The scheduler: the clock's door, and what the admin doors call to run a job by hand. Below
/// the doors, above everything else.
const SCHEDULER: &str = "jobs";

/// Module references that break a rule today: (from, to, why).
const KNOWN_DEBT: &[(&str, &str, &str)] = &[];

/// Today's file-level circles, as the edges allowed to close one: (from, to, why), each a
/// path prefix under server/src. An allowance no edge on a circle needs any more fails.
const KNOWN_CIRCLE_EDGES: &[(&str, &str, &str)] = &[];

/// Today's loops between top-level modules (folders), as the edges allowed to close one:
/// (from, to, why). An allowance no loop needs any more fails.
const KNOWN_MODULE_LOOPS: &[(&str, &str, &str)] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Every `.rs` file under `dir`, relative to it with `/` separators, sorted.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read folder") {
        let path = entry.expect("folder entry").path();
        let name = path.file_name().expect("file name").to_string_lossy().into_owned();
        if path.is_dir() {
            out.extend(rust_files(&path).into_iter().map(|file| format!("{name}/{file}")));
        } else if name.ends_with(".rs") {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// What a build without tests compiles of a file: no comment lines, nothing from `#[cfg(test)]` on.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("source file");
    let lines = text.lines().take_while(|line| !line.trim_start().starts_with("#[cfg(test)]"));
    let kept: Vec<&str> = lines.filter(|line| !line.trim_start().starts_with("//")).collect();
    kept.join("\n")
}

/// `crm/contact/ops.rs` is `crm::contact::ops`, `crm/mod.rs` is `crm`, `lib.rs` and `main.rs` the root.
fn module_path(file: &str) -> Vec<String> {
    let mut segments: Vec<String> = file.trim_end_matches(".rs").split('/').map(String::from).collect();
    if segments.last().is_some_and(|s| s == "mod") || file == "lib.rs" || file == "main.rs" {
        segments.pop();
    }
    segments
}

/// The top-level module a file belongs to: `api/contacts.rs` -> `api`, `lib.rs` -> `lib`.
fn top(file: &str) -> &str {
    file.trim_end_matches(".rs").split('/').next().unwrap_or(file)
}

/// A file's references (absolute module paths) and its `pub use` names (name -> path).
#[derive(Default)]
struct Refs {
    uses: Vec<Vec<String>>,
    reexports: BTreeMap<String, Vec<String>>,
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn skip_space(b: &[u8], i: usize) -> usize {
    i + b[i..].iter().take_while(|c| c.is_ascii_whitespace()).count()
}

/// The identifier at `i` (empty if none) and where it ends.
fn ident(b: &[u8], i: usize) -> (String, usize) {
    let end = i + b[i..].iter().take_while(|&&c| is_ident(c)).count();
    (String::from_utf8_lossy(&b[i..end]).into_owned(), end)
}

/// Reads the path or use tree at `i` below `prefix`, pushing each full path with the name it
/// binds (its alias or last segment); returns where it ends.
fn tree(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) -> usize {
    let mut segments = prefix.to_vec();
    loop {
        i = skip_space(b, i);
        if b.get(i) == Some(&b'{') {
            i += 1;
            loop {
                i = skip_space(b, i);
                if i >= b.len() || b[i] == b'}' {
                    return (i + 1).min(b.len());
                }
                i = tree(b, i, &segments, out);
                i += b[i..].iter().take_while(|&&c| c != b',' && c != b'}').count();
                i += usize::from(b.get(i) == Some(&b','));
            }
        }
        let (name, j) = ident(b, i);
        if name.is_empty() {
            out.push((segments, None));
            return i;
        }
        if name != "self" {
            segments.push(name);
        }
        i = skip_space(b, j);
        if b[i..].starts_with(b"::") {
            i += 2;
            continue;
        }
        let mut alias = segments.last().cloned();
        if b[i..].starts_with(b"as") && b.get(i + 2).is_some_and(u8::is_ascii_whitespace) {
            let (name, k) = ident(b, skip_space(b, i + 2));
            alias = Some(name);
            i = k;
        }
        out.push((segments, alias));
        return i;
    }
}

fn is_pub_use(before: &[u8]) -> bool {
    let Some(rest) = before.trim_ascii_end().strip_suffix(b"use") else { return false };
    let rest = rest.trim_ascii_end();
    rest.ends_with(b"pub") || rest.ends_with(b"pub(crate)") || rest.ends_with(b"pub(super)")
}

/// The modules a `lib.rs` or `mod.rs` declares with `mod name;`.
fn declared_children(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").or_else(|| line.strip_prefix("pub(crate) ")).unwrap_or(line);
            Some(line.strip_prefix("mod ")?.strip_suffix(';')?.trim().to_string())
        })
        .collect()
}

fn parse(file: &str, text: &str) -> Refs {
    let b = text.as_bytes();
    let me = module_path(file);
    let children = if file == "lib.rs" || file.ends_with("mod.rs") { declared_children(text) } else { BTreeSet::new() };
    let mut refs = Refs::default();
    let mut i = 0;
    while i < b.len() {
        if i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':') {
            i += 1;
            continue;
        }
        let start = i;
        let absolute = ["crate::", "mycorrhizal::"].into_iter().find(|p| b[i..].starts_with(p.as_bytes()));
        let base = if let Some(prefix) = absolute {
            i += prefix.len();
            Some(Vec::new())
        } else if b[i..].starts_with(b"super::") {
            let mut up = 0;
            while b[i..].starts_with(b"super::") {
                up += 1;
                i += 7;
            }
            Some(me[..me.len().saturating_sub(up)].to_vec())
        } else if b[i..].starts_with(b"self::") {
            i += 6;
            Some(me.clone())
        } else {
            let (name, j) = ident(b, i);
            let method = i > 0 && b[i - 1] == b'.';
            if children.contains(&name) && b[j..].starts_with(b"::") && !method {
                Some(me.clone())
            } else {
                i = j.max(i + 1);
                None
            }
        };
        let Some(base) = base else { continue };
        let mut found = Vec::new();
        i = tree(b, i, &base, &mut found);
        if is_pub_use(&b[..start]) {
            refs.reexports.extend(found.into_iter().filter_map(|(path, name)| Some((name?, path))));
        } else {
            refs.uses.extend(found.into_iter().map(|(path, _)| path));
        }
    }
    refs
}

/// Every file under server/src (relative to it) with its references.
fn parse_server() -> BTreeMap<String, Refs> {
    parse_crate("server")
}

/// Every file under `<crate_dir>/src` (relative to it) with its references.
fn parse_crate(crate_dir: &str) -> BTreeMap<String, Refs> {
    let src = root().join(crate_dir).join("src");
    let parse_file = |file: String| {
        let refs = parse(&file, &code(&src.join(&file)));
        (file, refs)
    };
    rust_files(&src).into_iter().map(parse_file).collect()
}

/// The file a path leads to: the longest prefix that is a file, through `pub use` names.
fn resolve(files: &BTreeMap<String, Refs>, path: &[String], depth: usize) -> String {
    let (file, k) = (1..=path.len())
        .rev()
        .find_map(|k| {
            let prefix = path[..k].join("/");
            let candidates = [format!("{prefix}.rs"), format!("{prefix}/mod.rs")];
            candidates.into_iter().find(|f| files.contains_key(f)).map(|f| (f, k))
        })
        .unwrap_or_else(|| ("lib.rs".to_string(), 0));
    let refs = &files[&file];
    match path.get(k).and_then(|name| refs.reexports.get(name)) {
        Some(target) if depth < 8 => {
            let mut next = target.clone();
            next.extend_from_slice(&path[k + 1..]);
            resolve(files, &next, depth + 1)
        }
        _ => file,
    }
}

/// Each file and the other files it imports.
fn file_graph(files: &BTreeMap<String, Refs>) -> BTreeMap<String, BTreeSet<String>> {
    files
        .iter()
        .map(|(file, refs)| {
            let targets: BTreeSet<String> =
                refs.uses.iter().map(|path| resolve(files, path, 0)).filter(|target| target != file).collect();
            (file.clone(), targets)
        })
        .collect()
}

/// (from module, to module) -> the file imports behind it.
fn module_edges() -> BTreeMap<(String, String), Vec<String>> {
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (file, targets) in file_graph(&parse_server()) {
        for target in targets.iter().filter(|t| top(t) != top(&file)) {
            edges
                .entry((top(&file).to_string(), top(target).to_string()))
                .or_default()
                .push(format!("{file} -> {target}"));
        }
    }
    edges
}

fn door(module: &str) -> Option<usize> {
    DOORS.iter().position(|group| group.contains(&module))
}

/// Fails on each module edge `breaks` rejects that KNOWN_DEBT does not list, and on each listed
/// one `breaks` rejects that no longer occurs.
fn check_modules(rule: &str, breaks: impl Fn(&str, &str) -> bool) {
    let src = root().join("server/src");
    for group in DOORS {
        let found = src.join(group[0]).is_dir() || src.join(format!("{}.rs", group[0])).is_file();
        assert!(found, "no module {} in server/src: is the list of doors stale?", group[0]);
    }
    let edges = module_edges();
    let mut problems = Vec::new();
    for ((from, to), imports) in &edges {
        let listed = KNOWN_DEBT.iter().any(|&(f, t, _)| f == from.as_str() && t == to.as_str());
        if breaks(from.as_str(), to.as_str()) && !listed {
            problems.push(format!("{from} -> {to}: {}", imports.join(", ")));
        }
    }
    for &(from, to, why) in KNOWN_DEBT {
        if breaks(from, to) && !edges.contains_key(&(from.to_string(), to.to_string())) {
            problems.push(format!("KNOWN_DEBT lists {from} -> {to} ({why}), which no longer occurs: remove it"));
        }
    }
    assert!(problems.is_empty(), "{rule}:\n{}", problems.join("\n"));
}

#[test]
fn front_doors_never_import_each_other() {
    check_modules("a front door imports another", |from, to| {
        door(from).is_some() && door(to).is_some() && door(from) != door(to)
    });
}

#[test]
fn the_domain_never_imports_a_front_door() {
    // Below the doors is every module but the doors and the composition root (lib.rs), which
    // nothing below the doors may import either; below the scheduler, nothing imports it.
    check_modules("a module below the front doors imports one (or lib.rs)", |from, to| {
        door(from).is_none() && from != "lib" && (door(to).is_some() || to == "lib" || to == SCHEDULER)
    });
}

/// The files `from` reaches through its imports (itself only when it is on a circle).
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&String> = graph[from].iter().collect();
    while let Some(file) = todo.pop() {
        if seen.insert(file.clone()) {
            todo.extend(&graph[file]);
        }
    }
    seen
}

/// The import circles (strongly connected components): each set of two or more files that
/// all reach one another.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<BTreeSet<String>> {
    let reaches: BTreeMap<&str, BTreeSet<String>> = graph.keys().map(|f| (f.as_str(), reach(graph, f))).collect();
    let circle_of = |file: &str, reached: &BTreeSet<String>| -> BTreeSet<String> {
        reached.iter().filter(|other| reaches[other.as_str()].contains(file)).cloned().collect()
    };
    reaches.iter().map(|(file, reached)| circle_of(*file, reached)).filter(|circle| circle.len() > 1).collect()
}

/// What is wrong with `graph` against its `allowed` edges (from, to, why), `names(pattern, node)`
/// telling whether a pattern names a node: each circle left once the allowed edges are taken
/// out, and each allowance no circle needs any more (`list` names the constant to edit).
fn circle_problems(
    graph: &BTreeMap<String, BTreeSet<String>>,
    allowed: &[(&str, &str, &str)],
    names: fn(&str, &str) -> bool,
    what: &str,
    list: &str,
) -> Vec<String> {
    let is_allowed = |from: &str, to: &str| allowed.iter().any(|&(f, t, _)| names(f, from) && names(t, to));
    let pruned: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(from, targets)| (from.clone(), targets.iter().filter(|to| !is_allowed(from, to)).cloned().collect()))
        .collect();
    let mut problems: Vec<String> = circles(&pruned)
        .iter()
        .map(|circle| format!("a new {what}: {}", circle.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    let today = circles(graph);
    for &(f, t, why) in allowed {
        let needed = today.iter().any(|circle| {
            circle
                .iter()
                .filter(|from| names(f, from))
                .any(|from| graph[from].iter().any(|to| names(t, to) && circle.contains(to)))
        });
        if !needed {
            problems.push(format!("no {what} needs {f} -> {t} ({why}) any more: remove it from {list}"));
        }
    }
    problems
}

#[test]
fn no_file_level_import_circle_outside_the_known_debt() {
    let graph = file_graph(&parse_server());
    let by_prefix: fn(&str, &str) -> bool = |prefix, file| file.starts_with(prefix);
    let problems = circle_problems(&graph, KNOWN_CIRCLE_EDGES, by_prefix, "import circle", "KNOWN_CIRCLE_EDGES");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_loop_between_folders_outside_the_known_debt() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in module_edges().keys() {
        graph.entry(to.clone()).or_default();
        graph.entry(from.clone()).or_default().insert(to.clone());
    }
    let by_name: fn(&str, &str) -> bool = |name, module| name == module;
    let problems = circle_problems(&graph, KNOWN_MODULE_LOOPS, by_name, "loop between folders", "KNOWN_MODULE_LOOPS");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_engine_has_no_import_circle() {
    // lib.rs is the engine's facade: it declares the modules, re-exports their types and defines
    // the handles (`Engine`, `UserScope`) the modules take, so edges into it are not counted.
    let graph: BTreeMap<String, BTreeSet<String>> = file_graph(&parse_crate("engine"))
        .into_iter()
        .map(|(file, targets)| (file, targets.into_iter().filter(|t| t != "lib.rs").collect()))
        .collect();
    let found: Vec<String> = circles(&graph).iter().map(|c| c.iter().cloned().collect::<Vec<_>>().join(", ")).collect();
    assert!(found.is_empty(), "import circles in engine/src:\n{}", found.join("\n"));
}

/// The non-comment, non-test lines of a crate's src/ that contain one of `needles`.
fn lines_mentioning(crate_dir: &str, needles: &[&str]) -> Vec<String> {
    let src = root().join(crate_dir).join("src");
    let mut found = Vec::new();
    let files = rust_files(&src);
    assert!(!files.is_empty(), "no Rust files under {}", src.display());
    for file in files {
        for line in code(&src.join(&file)).lines().filter(|line| needles.iter().any(|n| line.contains(*n))) {
            found.push(format!("{crate_dir}/src/{file}: {}", line.trim()));
        }
    }
    found
}

#[test]
fn the_engine_never_sees_http() {
    let found = lines_mentioning("engine", &["axum", "http::", "reqwest", "tower"]);
    assert!(found.is_empty(), "the engine names HTTP:\n{}", found.join("\n"));
}

#[test]
fn codecs_do_no_io() {
    let found = lines_mentioning("codecs", &["std::fs", "std::net", "tokio", "reqwest"]);
    assert!(found.is_empty(), "the codecs do I/O:\n{}", found.join("\n"));
}

/// The OpenAPI document names each schema after its type (or its `#[schema(as = ...)]`); two
/// types of one name would silently share one schema, and one route would be documented with the
/// other's shape. Every name is one type's.
#[test]
fn every_schema_name_is_one_types() {
    let src = root().join("server").join("src");
    let mut names: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for file in rust_files(&src) {
        let text = code(&src.join(&file));
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if !(line.starts_with("#[derive(") && line.contains("ToSchema")) {
                continue;
            }
            let mut alias = None;
            for next in &lines[i + 1..] {
                if let Some(rest) = next.strip_prefix("#[schema(as = ") {
                    alias = rest.split(')').next().map(|a| a.rsplit("::").next().unwrap_or(a).trim().to_string());
                } else if next.starts_with("#[") || next.starts_with("///") {
                    continue;
                } else {
                    let name = next
                        .split_whitespace()
                        .skip_while(|w| !matches!(*w, "struct" | "enum"))
                        .nth(1)
                        .map(|n| n.trim_end_matches(['{', ';', '<']).split('<').next().unwrap_or(n).to_string());
                    if let Some(name) = alias.clone().or(name) {
                        names.entry(name).or_default().push(file.clone());
                    }
                    break;
                }
            }
        }
    }
    assert!(names.len() > 100, "the scan found only {} schemas", names.len());
    let shared: Vec<String> =
        names.iter().filter(|(_, files)| files.len() > 1).map(|(n, f)| format!("{n}: {}", f.join(", "))).collect();
    assert!(shared.is_empty(), "schema names of more than one type:\n{}", shared.join("\n"));
}
