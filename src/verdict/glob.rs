//! Globs over rule ids: `*` matches any run of characters (dots too), `?` one character,
//! everything else itself. `amqp10.link.*`, `*.frame-after-close`, `*`.

/// Whether `text` matches `pattern`. Linear in practice: the classic two-pointer match, which
/// backtracks only to the last `*` (no recursion, no allocation).
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_questions_and_literals() {
        let id = "amqp10.connection.frame-after-close";
        assert!(matches(id, id));
        assert!(matches("*", id));
        assert!(matches("amqp10.*", id));
        assert!(matches("*.frame-after-close", id));
        assert!(matches("amqp1?.connection.*close", id));
        assert!(matches("a*c*e", id));
        assert!(!matches("amqp091.*", id));
        assert!(!matches("amqp10.connection", id));
        assert!(!matches(id, "amqp10.connection"));
        assert!(!matches("", id));
        assert!(matches("", ""));
        assert!(matches("**", ""));
    }
}
