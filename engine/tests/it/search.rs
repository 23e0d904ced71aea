//! Full-text search: fed by the change feed, read-your-writes through the overlay, replay after a
//! crash between the database commit and the index commit, atomic rebuild under writes, and
//! per-user isolation. Every query check runs twice: before the index commit (served by the
//! overlay) and after it (served by tantivy), so both paths obey the same rules.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mycorrhizal_engine::{
    Durability, Engine, Error, Kind, Options, Plan, Precondition, Record, SearchDoc, SearchOptions, SearchRequest,
    SearchStatus, Source, UserId, kind,
};
use serde::{Deserialize, Serialize};
use tempfile::TempDir;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Friend {
    name: String,
    about: String,
    archived: bool,
}

impl Record for Friend {
    const KIND: Kind = kind!("friend", soft_delete);

    fn search_doc(&self) -> Option<SearchDoc> {
        Some(SearchDoc { title: self.name.clone(), body: self.about.clone(), hidden: self.archived, contacts: vec![] })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Memo {
    text: String,
    friend: u64,
}

impl Record for Memo {
    const KIND: Kind = kind!("memo", soft_delete);

    fn search_doc(&self) -> Option<SearchDoc> {
        Some(SearchDoc { body: self.text.clone(), contacts: vec![self.friend], ..SearchDoc::default() })
    }
}

/// Not searchable: its writes must not disturb the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Secret {
    text: String,
}

impl Record for Secret {
    const KIND: Kind = kind!("secret", soft_delete);
}

fn friend(name: &str, about: &str) -> Friend {
    Friend { name: name.into(), about: about.into(), archived: false }
}

fn options(dir: &Path, interval: Duration) -> Options {
    let mut search = SearchOptions::new(dir.join("search"), vec![Source::of::<Friend>(), Source::of::<Memo>()]);
    search.commit_interval = interval;
    search.writer_memory = 15 << 20;
    Options { search: Some(search), durability: Durability::None, ..Options::default() }
}

/// Commits only when asked: everything written stays in the overlay until a flush.
const NEVER: Duration = Duration::from_secs(3600);

fn open(dir: &TempDir, interval: Duration) -> Engine {
    Engine::open(dir.path().join("db.redb"), options(dir.path(), interval)).expect("open").0
}

/// Waits (30 s at most, for a slow machine) until the index's status satisfies `done`.
fn wait_until(engine: &Engine, never: &str, done: impl Fn(&SearchStatus) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !done(&engine.search_status().expect("status")) {
        assert!(std::time::Instant::now() < deadline, "{never}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const A: UserId = UserId(1);
const B: UserId = UserId(2);

/// `(kind, ids best first)` per group.
fn find(engine: &Engine, user: UserId, q: &str) -> Vec<(&'static str, Vec<u64>)> {
    find_with(engine, user, q, false, None)
}

fn find_with(
    engine: &Engine,
    user: UserId,
    q: &str,
    include_hidden: bool,
    contacts: Option<&[u64]>,
) -> Vec<(&'static str, Vec<u64>)> {
    let Some(plan) = Plan::parse(q) else { return vec![] };
    let request = SearchRequest { plan: &plan, kinds: None, include_hidden, contacts, limit: 50, offset: 0 };
    let groups = engine.user(user).search(&request).expect("search");
    groups.into_iter().map(|g| (g.kind, g.hits.iter().map(|h| h.id).collect())).collect()
}

fn friends(engine: &Engine, user: UserId, q: &str) -> Vec<u64> {
    find(engine, user, q).into_iter().find(|(k, _)| *k == "friend").map(|(_, ids)| ids).unwrap_or_default()
}

/// `(hits returned, total)` of the friend group, asking for `limit` hits.
fn friend_counts(engine: &Engine, user: UserId, q: &str, limit: usize) -> (usize, usize) {
    let plan = Plan::parse(q).expect("plan");
    let request = SearchRequest {
        plan: &plan,
        kinds: Some(&["friend"]),
        include_hidden: false,
        contacts: None,
        limit,
        offset: 0,
    };
    let group = engine.user(user).search(&request).expect("search").remove(0);
    (group.hits.len(), group.total)
}

fn memos(engine: &Engine, user: UserId, q: &str) -> Vec<u64> {
    find(engine, user, q).into_iter().find(|(k, _)| *k == "memo").map(|(_, ids)| ids).unwrap_or_default()
}

struct Seeded {
    jose: u64,
    alice: u64,
    bob: u64,
    memo: u64,
}

fn seed(engine: &Engine) -> Seeded {
    let a = engine.user(A);
    let jose = a.create(friend("José Álvarez", "Loves climbing")).expect("create").id;
    let alice = a.create(friend("Alice Martin", "Met at the Rust meetup in Lyon")).expect("create").id;
    let bob = a.create(friend("Bob Stone", "Alice's brother, plays chess, call 33612345678")).expect("create").id;
    let memo = a.create(Memo { text: "Lunch with Alice, talked about the new climbing gym".into(), friend: alice });
    let memo = memo.expect("create").id;
    a.create(Secret { text: "alice".into() }).expect("create");
    Seeded { jose, alice, bob, memo }
}

fn assert_query_rules(engine: &Engine, s: &Seeded) {
    // Diacritics and case are folded, in both directions.
    assert_eq!(friends(engine, A, "jose"), vec![s.jose]);
    assert_eq!(friends(engine, A, "ÁLVAREZ"), vec![s.jose]);
    // Type-ahead prefix.
    assert_eq!(friends(engine, A, "ali"), vec![s.alice, s.bob], "name match first, body match after");
    // Two letters find the names they start (not Bob, whose text only mentions Alice).
    let mut two = friends(engine, A, "al");
    two.sort();
    assert_eq!(two, {
        let mut v = vec![s.jose, s.alice];
        v.sort();
        v
    });
    assert_eq!(friends(engine, A, "bo"), vec![s.bob]);
    assert_eq!(friends(engine, A, "bob"), vec![s.bob], "a word of three letters is its own gram");
    assert_eq!(friends(engine, A, "bro"), vec![s.bob], "three letters find words in the text");
    // Numbers by their start as typed, by their ending, and by their ending typed with a trunk zero.
    assert_eq!(friends(engine, A, "336123"), vec![s.bob]);
    assert_eq!(friends(engine, A, "5678"), vec![s.bob]);
    assert_eq!(friends(engine, A, "0612345678"), vec![s.bob]);
    assert_eq!(friends(engine, A, "1234"), Vec::<u64>::new(), "not by the middle");
    // One typo on a word of five letters or more; not on shorter words.
    assert_eq!(friends(engine, A, "alvarex"), vec![s.jose]);
    assert_eq!(friends(engine, A, "climbimg"), vec![s.jose]);
    assert_eq!(friends(engine, A, "jise"), Vec::<u64>::new());
    // Every word must match, in any field.
    assert_eq!(friends(engine, A, "alice lyon"), vec![s.alice]);
    assert_eq!(friends(engine, A, "alice paris"), Vec::<u64>::new());
    // Quoted phrases keep order and adjacency.
    assert_eq!(friends(engine, A, "\"rust meetup\""), vec![s.alice]);
    assert_eq!(friends(engine, A, "\"meetup rust\""), Vec::<u64>::new());
    // Kinds are grouped; the unsearchable kind never appears.
    let all = find(engine, A, "alice");
    assert_eq!(all.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec!["friend", "memo"]);
    assert_eq!(memos(engine, A, "climbing gym"), vec![s.memo]);
    // Restricting to contacts.
    let only_bob = find_with(engine, A, "alice", false, Some(&[s.bob]));
    assert_eq!(only_bob, vec![("friend", vec![]), ("memo", vec![])]);
    let only_alice = find_with(engine, A, "climbing", false, Some(&[s.alice]));
    assert_eq!(only_alice, vec![("friend", vec![]), ("memo", vec![s.memo])]);
}

#[test]
fn queries_follow_the_rules_before_and_after_the_index_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let s = seed(&engine);
    assert!(engine.search_status().expect("status").pending >= 4, "served by the overlay");
    assert_query_rules(&engine, &s);
    engine.search_flush().expect("flush");
    let status = engine.search_status().expect("status");
    assert_eq!((status.pending, status.documents), (0, 4), "committed: 3 friends, 1 memo");
    assert_query_rules(&engine, &s);
}

#[test]
fn phrases_match_adjacent_words_in_order_before_and_after_the_index_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let a = engine.user(A);
    let cat = a.create(friend("Tom Cat", "The cat sat on the mat")).expect("create").id;
    let dog = a.create(friend("Rex Dog", "Sat on the porch, the cat ran")).expect("create").id;
    for round in ["overlay", "committed"] {
        let mut both = friends(&engine, A, "\"the cat\"");
        both.sort_unstable();
        assert_eq!(both, vec![cat, dog], "{round}");
        assert_eq!(friends(&engine, A, "\"cat the\""), Vec::<u64>::new(), "{round}: order counts");
        assert_eq!(friends(&engine, A, "\"sat on the mat\""), vec![cat], "{round}");
        assert_eq!(friends(&engine, A, "\"the cat ran\""), vec![dog], "{round}");
        // Every pair of `sat on the cat` is in the first card, the phrase is in neither.
        assert_eq!(friends(&engine, A, "\"sat on the cat\""), Vec::<u64>::new(), "{round}: pairs alone are not enough");
        // A phrase never joins the name to the body.
        assert_eq!(friends(&engine, A, "\"dog sat\""), Vec::<u64>::new(), "{round}");
        assert_eq!(friends(&engine, A, "\"rex dog\" porch"), vec![dog], "{round}");
        engine.search_flush().expect("flush");
    }
    assert_eq!(friends(&engine, B, "\"the cat\""), Vec::<u64>::new(), "another user's pairs are never reached");
}

#[test]
fn updates_deletes_and_hiding_are_visible_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let s = seed(&engine);
    engine.search_flush().expect("flush");
    let a = engine.user(A);
    // Updated text is found by its new words, no longer by its old ones; no commit in between.
    a.put(s.bob, Precondition::Any, friend("Robert Stone", "plays go")).expect("put");
    assert_eq!(friends(&engine, A, "robert"), vec![s.bob]);
    assert_eq!(friends(&engine, A, "chess"), Vec::<u64>::new());
    // Hidden (archived) rows leave a plain search but are found when asked for.
    a.put(s.jose, Precondition::Any, Friend { archived: true, ..friend("José Álvarez", "Loves climbing") })
        .expect("put");
    assert_eq!(friends(&engine, A, "jose"), Vec::<u64>::new());
    let hidden = find_with(&engine, A, "jose", true, None);
    assert_eq!(hidden[0], ("friend", vec![s.jose]));
    // Deleted rows disappear.
    a.delete::<Memo>(s.memo, Precondition::Any).expect("delete");
    assert_eq!(memos(&engine, A, "gym"), Vec::<u64>::new());
    // And the same after the index commits.
    engine.search_flush().expect("flush");
    assert_eq!(engine.search_status().expect("status").pending, 0);
    assert_eq!(friends(&engine, A, "robert"), vec![s.bob]);
    assert_eq!(friends(&engine, A, "chess"), Vec::<u64>::new());
    assert_eq!(friends(&engine, A, "jose"), Vec::<u64>::new());
    assert_eq!(memos(&engine, A, "gym"), Vec::<u64>::new());
}

#[test]
fn the_indexer_commits_on_its_own_within_the_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, Duration::from_millis(50));
    seed(&engine);
    wait_until(&engine, "the overlay never drained", |s| s.pending == 0);
    assert_eq!(engine.search_status().expect("status").documents, 4);
}

#[test]
fn segments_merge_once_writing_pauses_not_while_it_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let a = engine.user(A);
    // Each flush commits a segment of its own; twelve is past the eight a merge waits for.
    for n in 0..12 {
        a.create(friend(&format!("Friend{n} Stream"), "written in a stream")).expect("create");
        engine.search_flush().expect("flush");
    }
    assert_eq!(engine.search_status().expect("status").segments, 12, "no merge while writing");
    wait_until(&engine, "the held-back merge never ran", |s| s.segments == 1);
    let status = engine.search_status().expect("status");
    assert_eq!((status.documents, status.pending), (12, 0));
    assert_eq!(friends(&engine, A, "stream").len(), 12);
}

#[test]
fn other_users_documents_are_never_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    seed(&engine);
    engine.user(B).create(friend("Zoe Quinn", "runs marathons")).expect("create");
    for round in 0..2 {
        for q in ["alice", "ali", "alicf", "\"rust meetup\"", "climbing", "jose"] {
            assert!(find(&engine, B, q).iter().all(|(_, ids)| ids.is_empty()), "B found A's rows with {q:?} ({round})");
        }
        assert!(find(&engine, A, "zoe").iter().all(|(_, ids)| ids.is_empty()));
        assert_eq!(friends(&engine, B, "marathon").len(), 1);
        engine.search_flush().expect("flush");
    }
}

#[test]
fn a_crash_between_database_and_index_commit_is_replayed_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let s = seed(&engine);
    engine.shutdown();
    drop(engine);
    // Writes the index never hears of: the database commits, the index does not (as when the
    // process dies before the indexer's commit).
    let (plain, _) =
        Engine::open(dir.path().join("db.redb"), Options { durability: Durability::None, ..Options::default() })
            .expect("open");
    let a = plain.user(A);
    let carol = a.create(friend("Carol Danvers", "pilot")).expect("create").id;
    a.put(s.bob, Precondition::Any, friend("Robert Stone", "plays go")).expect("put");
    a.delete::<Friend>(s.jose, Precondition::Any).expect("delete");
    plain.user(B).create(friend("Zoe Quinn", "runs")).expect("create");
    drop(a);
    plain.shutdown();
    drop(plain);

    let engine = open(&dir, NEVER);
    let status = engine.search_status().expect("status");
    assert_eq!(status.pending, 0, "the replay happened at start and was committed");
    assert_eq!(status.documents, 5);
    assert_eq!(friends(&engine, A, "carol"), vec![carol]);
    assert_eq!(friends(&engine, A, "robert"), vec![s.bob]);
    assert_eq!(friends(&engine, A, "chess"), Vec::<u64>::new());
    assert_eq!(friends(&engine, A, "jose"), Vec::<u64>::new());
    assert_eq!(friends(&engine, B, "zoe").len(), 1);
}

#[test]
fn a_missing_or_foreign_index_is_rebuilt_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let s = seed(&engine);
    engine.shutdown();
    drop(engine);
    // A lost index folder.
    std::fs::remove_dir_all(dir.path().join("search")).expect("remove");
    let engine = open(&dir, NEVER);
    assert_eq!(engine.search_status().expect("status").documents, 4);
    assert_eq!(friends(&engine, A, "alice"), vec![s.alice, s.bob]);
    engine.shutdown();
    drop(engine);
    // CURRENT naming a folder that holds no index (a half-written generation).
    std::fs::write(dir.path().join("search/CURRENT"), "gen-0").expect("write");
    std::fs::create_dir_all(dir.path().join("search/gen-0")).expect("mkdir");
    let engine = open(&dir, NEVER);
    assert_eq!(engine.search_status().expect("status").documents, 4);
    assert_eq!(memos(&engine, A, "gym"), vec![s.memo]);
}

#[test]
fn an_index_ahead_of_the_database_is_rebuilt() {
    // As after restoring an older database: the index has seen changes the database has not.
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let s = seed(&engine);
    engine.search_flush().expect("flush");
    let snapshot = engine.snapshot(&dir.path().join("snap"), "before").expect("snapshot");
    engine.user(A).create(friend("Dora Explorer", "maps")).expect("create");
    engine.shutdown();
    drop(engine);
    std::fs::copy(&snapshot.path, dir.path().join("db.redb")).expect("restore");
    let engine = open(&dir, NEVER);
    assert_eq!(friends(&engine, A, "dora"), Vec::<u64>::new());
    assert_eq!(friends(&engine, A, "alice"), vec![s.alice, s.bob]);
    assert_eq!(engine.search_status().expect("status").documents, 4);
}

/// Stored in the memo table, but shorter than a memo: a row no memo reader can decode (what a
/// damaged or foreign row looks like to the index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct NotAMemo {
    text: String,
}

impl Record for NotAMemo {
    const KIND: Kind = kind!("memo", soft_delete);
}

#[test]
fn a_failed_rebuild_leaves_the_old_index_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let alice = engine.user(A).create(friend("Alice Liddell", "rabbit hole")).expect("create").id;
    engine.search_flush().expect("flush");
    let current = std::fs::read_to_string(dir.path().join("search/CURRENT")).expect("current");
    // Another user's row the rebuild cannot read makes it fail.
    engine.user(B).create(NotAMemo { text: "unreadable".into() }).expect("create");
    let error = engine.search_rebuild().expect_err("the rebuild reads every row");
    assert!(!matches!(error, Error::RebuildRunning), "{error:?}");
    // The old generation still answers, is still the one a restart opens, and is the only one.
    assert_eq!(friends(&engine, A, "alice"), vec![alice]);
    assert_eq!(friends(&engine, A, "rab"), vec![alice]);
    assert_eq!(std::fs::read_to_string(dir.path().join("search/CURRENT")).expect("current"), current);
    let generations = std::fs::read_dir(dir.path().join("search"))
        .expect("read")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
        .count();
    assert_eq!(generations, 1, "the failed generation is removed");
    // The failure does not leave a rebuild marked as running: the next one is tried, not refused.
    let status = engine.search_status().expect("status");
    assert!(!status.rebuilding);
    assert!(!matches!(engine.search_rebuild(), Err(Error::RebuildRunning)));
}

#[test]
fn a_purged_user_leaves_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    seed(&engine);
    engine.user(B).create(friend("Zoe Quinn", "runs")).expect("create");
    engine.search_flush().expect("flush");
    engine.write(|tx| tx.purge_user(A)).expect("purge");
    engine.search_flush().expect("flush");
    assert_eq!(engine.search_status().expect("status").documents, 1);
    assert!(find(&engine, A, "alice").iter().all(|(_, ids)| ids.is_empty()));
}

#[test]
fn rebuild_swaps_atomically_and_loses_no_concurrent_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, Duration::from_millis(30));
    let a = engine.user(A);
    for chunk in 0..10 {
        a.write(move |tx| {
            for i in 0..300 {
                tx.create(friend(&format!("Seed{chunk}x{i} Person"), "common words here"))?;
            }
            Ok(())
        })
        .expect("seed");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut ids = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) || i < 20 {
                ids.push(
                    engine.user(A).create(friend(&format!("Late{i} Writer"), "during rebuild")).expect("create").id,
                );
                i += 1;
            }
            ids
        })
    };
    let rebuild = {
        let engine = engine.clone();
        std::thread::spawn(move || engine.search_rebuild())
    };
    // A second rebuild while the first runs is refused.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut refused = false;
    while !rebuild.is_finished() && std::time::Instant::now() < deadline {
        if engine.search_status().expect("status").rebuilding {
            refused = matches!(engine.search_rebuild(), Err(Error::RebuildRunning));
            break;
        }
        // Searches keep working during the rebuild.
        assert!(!friends(&engine, A, "seed0x1").is_empty());
    }
    let report = rebuild.join().expect("join").expect("rebuild");
    stop.store(true, Ordering::SeqCst);
    let written = writer.join().expect("join");
    assert!(refused, "the concurrent rebuild was not refused (or never observed running)");
    let (kind, count) = report.indexed[0];
    assert_eq!(kind, "friend");
    assert!(count >= 3000, "indexed {count}");
    // Every write made before, during and after the rebuild is found, with or without a commit.
    let plan = Plan::parse("during rebuild").expect("plan");
    // (Asking for more hits than a pruned search keeps ranks every match and counts them all.)
    let found = |engine: &Engine| {
        let request = SearchRequest {
            plan: &plan,
            kinds: None,
            include_hidden: false,
            contacts: None,
            limit: 100_000,
            offset: 0,
        };
        let group = engine.user(A).search(&request).expect("search").remove(0);
        let mut ids: Vec<u64> = group.hits.iter().map(|h| h.id).collect();
        ids.sort_unstable();
        (group.total, ids)
    };
    let mut expected = written.clone();
    expected.sort_unstable();
    assert_eq!(found(&engine), (written.len(), expected.clone()));
    engine.search_flush().expect("flush");
    assert_eq!(found(&engine), (written.len(), expected));
    assert_eq!(engine.search_status().expect("status").documents, 3000 + written.len() as u64);
    // Only the live generation is left on disk.
    let generations = std::fs::read_dir(dir.path().join("search"))
        .expect("read")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
        .count();
    assert_eq!(generations, 1);
    // And it is what a restart opens, without another rebuild.
    let current = std::fs::read_to_string(dir.path().join("search/CURRENT")).expect("current");
    drop(a);
    engine.shutdown();
    drop(engine);
    let engine = open(&dir, NEVER);
    assert_eq!(engine.search_status().expect("status").documents, 3000 + written.len() as u64);
    assert_eq!(std::fs::read_to_string(dir.path().join("search/CURRENT")).expect("current"), current);
}

#[test]
fn typos_and_prefixes_never_reach_a_look_alike_scope() {
    // User 0x11's terms differ from user 0x1's by one inserted byte in the scope: a typo must only
    // ever be tolerated in the word, never in its owner.
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let (one, seventeen) = (UserId(1), UserId(0x11));
    engine.user(one).create(friend("Garcia Lindqvist", "")).expect("create");
    engine.user(UserId(0x10)).create(friend("Garcia Lindqvist", "")).expect("create");
    engine.search_flush().expect("flush");
    for q in ["garcia", "garxia", "lindqvis", "lindquist", "gar", "ga", "lindq"] {
        assert_eq!(friends(&engine, one, q).len(), 1, "{q}");
        assert!(friends(&engine, seventeen, q).is_empty(), "{q}");
    }
}

#[test]
fn wide_prefixes_and_typos_fall_back_to_the_automaton_and_stay_complete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let a = engine.user(A);
    // 90 distinct words starting `ballan`, and 80 words one substitution from `kowalsky` (plus
    // some two edits away): both past the expansion limit, so the automata answer.
    let letter = |i: usize| (b'a' + (i % 26) as u8) as char;
    let one_edit: Vec<String> = (0..8)
        .flat_map(|pos| {
            (0..26).filter_map(move |c| {
                let mut word: Vec<char> = "kowalsky".chars().collect();
                (word[pos] != letter(c)).then(|| {
                    word[pos] = letter(c);
                    word.into_iter().collect::<String>()
                })
            })
        })
        .take(80)
        .collect();
    let seeded = one_edit.clone();
    a.write(move |tx| {
        for i in 0..90 {
            tx.create(friend(&format!("Ballan{}{} Person", letter(i / 26), letter(i)), ""))?;
        }
        for word in seeded.iter().map(String::as_str).chain(["kowalsxx", "kowxlskx"]) {
            tx.create(friend(word, "typo target"))?;
        }
        // 82 distinct grams starting `zq` (Latin, Greek and Cyrillic third letters).
        for third in ('a'..='z').chain('α'..='ω').chain('а'..='я').filter(|c| *c != 'ς') {
            tx.create(friend(&format!("Zq{third}x"), ""))?;
        }
        Ok(())
    })
    .expect("seed");
    engine.search_flush().expect("flush");
    assert_eq!(friend_counts(&engine, A, "ballan", 200), (90, 90));
    assert_eq!(friend_counts(&engine, A, "kowalsky typo", 200), (80, 80));
    assert_eq!(friend_counts(&engine, A, "zq", 200), (82, 82));
}

#[test]
fn totals_are_exact_below_the_cap_and_capped_above() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = open(&dir, NEVER);
    let a = engine.user(A);
    a.write(|tx| {
        for i in 0..1_100 {
            tx.create(friend(&format!("Member{i}"), if i < 25 { "rare word" } else { "common word" }))?;
        }
        Ok(())
    })
    .expect("seed");
    for flushed in [false, true] {
        if flushed {
            engine.search_flush().expect("flush");
        }
        let group = |q: &str| friend_counts(&engine, A, q, 10);
        assert_eq!(group("rare"), (10, 25), "flushed: {flushed}");
        assert_eq!(group("common"), (10, mycorrhizal_engine::SEARCH_TOTAL_CAP), "flushed: {flushed}");
    }
}

#[test]
fn a_backlog_leaves_the_overlay_a_chunk_at_a_time_without_waiting_for_the_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = options(dir.path(), NEVER);
    if let Some(search) = options.search.as_mut() {
        search.backlog_chunk = 4;
    }
    let engine = Engine::open(dir.path().join("db.redb"), options).expect("open").0;
    let a = engine.user(A);
    // Eleven rows in one transaction, as an import writes them: a backlog of three chunks.
    let written: Vec<u64> = a
        .write(|w| (0..11).map(|i| w.create(friend(&format!("Friend{i} Backlog"), "imported")).map(|r| r.id)).collect())
        .expect("write");
    assert_eq!(written.len(), 11);
    // The interval is an hour: only the backlog's own commits can cover rows. Two full chunks
    // and the third are committed (the backlog goes on past each), the last three rows wait.
    wait_until(&engine, "the backlog was not committed chunk by chunk", |s| s.pending <= 3);
    let status = engine.search_status().expect("status");
    assert_eq!((status.pending, status.documents), (3, 8));
    // Every row is found all along: eight from the index, three from the overlay.
    assert_eq!(friends(&engine, A, "backlog").len(), 11);
    engine.search_flush().expect("flush");
    let status = engine.search_status().expect("status");
    assert_eq!((status.pending, status.documents), (0, 11));
    assert_eq!(friends(&engine, A, "backlog").len(), 11);
}
