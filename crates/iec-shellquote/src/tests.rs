use super::*;

#[test]
fn placeholder() {
    assert_eq!(quote_str(""), "''");
}
