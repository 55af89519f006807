//! Putting a short list of keys in byte order before their entries are written, so the text
//! writer finds them in order and never has to move written bytes (the result is the same
//! either way; this only saves work). For table-driven objects whose keys come in spec order.

use super::text::before;

/// Lists longer than this are written as they come (and sorted by the text writer).
pub const MAX_KEYS: usize = 32;

/// Room for [`sort_keys`].
pub type KeyBuf<'a> = [(&'a str, usize); MAX_KEYS];

/// An empty [`KeyBuf`].
pub fn key_buf<'a>() -> KeyBuf<'a> {
    [("", 0); MAX_KEYS]
}

/// The `(key, position)` pairs of `keys` sorted by key (equal keys keep their order), in `buf`;
/// `None` when there are more than [`MAX_KEYS`].
pub fn sort_keys<'a, 'b>(
    keys: impl Iterator<Item = (&'a str, usize)>,
    buf: &'b mut KeyBuf<'a>,
) -> Option<&'b [(&'a str, usize)]> {
    let mut n = 0;
    for item in keys {
        *buf.get_mut(n)? = item;
        // Insertion sort: the lists are short and usually close to sorted.
        let mut k = n;
        while k > 0
            && buf
                .get(k - 1)
                .is_some_and(|p| before(item.0.as_bytes(), p.0.as_bytes()))
        {
            buf.swap(k - 1, k);
            k -= 1;
        }
        n += 1;
    }
    buf.get(..n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_and_gives_up_past_the_limit() {
        let mut buf = key_buf();
        let keys = ["b", "a", "c", "a", ""];
        let sorted = sort_keys(keys.iter().copied().zip(0..), &mut buf).unwrap();
        assert_eq!(sorted, [("", 4), ("a", 1), ("a", 3), ("b", 0), ("c", 2)]);
        let many = vec!["k"; MAX_KEYS + 1];
        assert!(sort_keys(many.iter().copied().zip(0..), &mut buf).is_none());
        assert_eq!(
            sort_keys(many[..MAX_KEYS].iter().copied().zip(0..), &mut buf).map(<[_]>::len),
            Some(MAX_KEYS)
        );
    }
}
