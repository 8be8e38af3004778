//! Closest names for "unknown name" messages: the candidates within a few edits of what the
//! user wrote (Levenshtein distance over characters, at most a third of the name's length
//! and never less than 3), best first, so a typo gets the name it meant; and perf's glob
//! (`strglobmatch`), which `list` and tracepoint names match with.

/// Up to `n` of `candidates` closest to `want` (compared case-insensitively), best first;
/// ties keep their alphabetical order.
pub fn closest<I, S>(want: &str, candidates: I, n: usize) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let want = want.to_lowercase();
    let limit = (want.chars().count() / 3).max(3);
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .map(Into::into)
        .map(|c| (edit_distance(&want, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

/// Levenshtein distance of `a` and `b`, by characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let del = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let ins = cur.get(j).copied().unwrap_or(0) + 1;
            if let Some(x) = cur.get_mut(j + 1) {
                *x = sub.min(del).min(ins);
            }
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

/// perf's glob (`strglobmatch`): `*`, `?`, `[abc]`, `[a-z]`, `[!x]`, `\x`, anchored at both
/// ends; `nocase` compares ASCII case-insensitively.
pub fn glob_match(pattern: &str, text: &str, nocase: bool) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t, nocase)
}

fn glob_at(p: &[char], t: &[char], nocase: bool) -> bool {
    let eq = |a: char, b: char| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut i, mut j) = (0, 0);
    while i < p.len() && p[i] != '*' {
        let Some(&c) = t.get(j) else {
            return false;
        };
        match p[i] {
            '?' => i += 1,
            '[' => {
                let Some(end) = p[i + 1..].iter().position(|&x| x == ']').map(|e| i + 1 + e) else {
                    return false;
                };
                let mut class = &p[i + 1..end];
                let negate = class.first() == Some(&'!');
                if negate {
                    class = &class[1..];
                }
                let mut hit = false;
                let mut k = 0;
                while k < class.len() {
                    if k + 2 < class.len() && class[k + 1] == '-' {
                        hit |= (class[k]..=class[k + 2]).contains(&c)
                            || (nocase
                                && (class[k].to_ascii_lowercase()
                                    ..=class[k + 2].to_ascii_lowercase())
                                    .contains(&c.to_ascii_lowercase()));
                        k += 3;
                    } else {
                        hit |= eq(class[k], c);
                        k += 1;
                    }
                }
                if hit == negate {
                    return false;
                }
                i = end + 1;
            }
            '\\' if i + 1 < p.len() => {
                if !eq(p[i + 1], c) {
                    return false;
                }
                i += 2;
            }
            x => {
                if !eq(x, c) {
                    return false;
                }
                i += 1;
            }
        }
        j += 1;
    }
    if i == p.len() {
        return j == t.len();
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    if i == p.len() {
        return true;
    }
    (j..t.len()).any(|k| glob_at(&p[i..], &t[k..], nocase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_names_they_meant() {
        assert_eq!(edit_distance("sched_swich", "sched_switch"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        let names = [
            "sched:sched_switch",
            "sched:sched_wakeup",
            "irq:irq_handler_entry",
        ];
        assert_eq!(
            closest("sched:sched_swich", names, 3),
            ["sched:sched_switch"]
        );
        assert_eq!(
            closest("SCHED:SCHED_WAKEUP", names, 1),
            ["sched:sched_wakeup"]
        );
        assert!(closest("block:block_rq_issue", names, 3).is_empty());
    }
}
