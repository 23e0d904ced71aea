//! The relationships a contact's card shows as `relatedTo`: confirmed edges of normal
//! sensitivity, each as the vCard RELATED type seen from this contact.

use mycorrhizal_engine::UserView;

use super::Contact;
use crate::crm::Result;
use crate::crm::relationship::ops::edges_of;

/// The vCard RELATED type for an edge seen from one end.
fn vcard_relation(kind: &str, outgoing: bool) -> &'static str {
    match (kind, outgoing) {
        ("parent_of", true) | ("child_of", false) => "child",
        ("child_of", true) | ("parent_of", false) => "parent",
        ("spouse_of", _) => "spouse",
        ("sibling_of", _) => "sibling",
        ("friend_of", _) => "friend",
        ("coworker_of", _) => "co-worker",
        ("partner_of", _) => "sweetheart",
        ("roommate_of", _) => "co-resident",
        _ => "contact",
    }
}

/// Relations of `contact` that are projected into its card: confirmed, normal sensitivity.
pub fn projected_relations(view: &UserView, contact: u64) -> Result<Vec<(String, &'static str)>> {
    let mut out = Vec::new();
    for (edge, outgoing) in edges_of(view, contact)? {
        if edge.body.sensitivity != "normal" || !edge.body.is_confirmed() {
            continue;
        }
        let other = if outgoing { edge.body.target } else { edge.body.source };
        if let Ok(row) = view.get::<Contact>(other) {
            out.push((row.body.uid, vcard_relation(&edge.body.kind, outgoing)));
        }
    }
    Ok(out)
}
