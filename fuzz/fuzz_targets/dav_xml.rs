//! What a DAV client sends as a PROPFIND, PROPPATCH or REPORT body: any bytes give a typed request or an
//! error (the front door's 400), never a panic; an accepted body names only non-empty property
//! names, and a tree it reads respects the depth and size limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mycorrhizal::dav::xml::{self, MAX_DEPTH, Propfind, Report};

fn depth(e: &xml::Element) -> usize {
    1 + e.children.iter().map(depth).max().unwrap_or(0)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(root)) = xml::parse(data) {
        assert!(depth(&root) <= MAX_DEPTH);
    }
    if let Ok(Propfind::Prop(props)) = xml::propfind(data) {
        assert!(props.iter().all(|p| !p.name.name.is_empty()));
    }
    if let Ok(updates) = xml::propertyupdate(data) {
        assert!(updates.iter().all(|u| !u.name.name.is_empty()));
    }
    if let Ok(Report::AddressbookMultiget { props, .. } | Report::CalendarMultiget { props, .. }) = xml::report(data) {
        assert!(props.iter().all(|p| !p.name.name.is_empty()));
    }
});
