//! Test probe: prints its argv (without argv[0]) as `{"argv": [...]}`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!("{}", serde_json::json!({ "argv": args }));
}
