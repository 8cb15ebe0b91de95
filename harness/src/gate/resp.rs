//! A hand-written RESP2 + RESP3 frame splitter.
//!
//! Why not the `redis` crate's parser: the gate must forward, record and
//! replay replies *byte for byte* (a replayed reply must be exactly what the
//! server sent, attributes and all), so it needs "where does the first frame
//! in this buffer end", not a parsed `Value` that would have to be
//! re-encoded (and could come out different: verbatim strings, doubles, big
//! numbers, attribute frames). The `redis` crate exposes no frame splitter,
//! only value parsers. Splitting is small and easy to test exhaustively, so it
//! lives here.
//!
//! [`frame_len`] answers "the first complete frame is N bytes long" or "need
//! more bytes"; it never copies. It handles every RESP3 type Redis sends
//! (`+ - : $ * % ~ > | _ , # ( = !`), nested aggregates, null bulk strings
//! and arrays (`$-1`, `*-1`) and attribute frames (`|`, which are counted
//! together with the frame they prefix). Streamed RESP3 types (`$?`, `*?`)
//! are refused: Redis never sends them.
//!
//! [`parse_request`] reads one client request: an array of bulk strings, or
//! an inline command (`PING\r\n`).

/// The longest inline command accepted (Redis's own limit is 64 KiB).
const MAX_INLINE: usize = 64 * 1024;
/// The longest bulk string accepted (Redis's `proto-max-bulk-len` maximum is
/// far below this; it only guards against absurd lengths).
const MAX_BULK: i64 = 1 << 40;

/// Bytes that are not RESP. Messages say what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The type byte is not one of RESP2/RESP3's.
    #[error("not RESP: unknown type byte {byte:#04x} at offset {offset}")]
    UnknownType {
        /// The byte found.
        byte: u8,
        /// Where, from the start of the frame.
        offset: usize,
    },
    /// A length or count is not a number, or is negative (other than `-1`).
    #[error("not RESP: bad length {text:?} at offset {offset}")]
    BadLength {
        /// The header line's text (lossy UTF-8).
        text: String,
        /// Where, from the start of the frame.
        offset: usize,
    },
    /// A bulk string is not followed by `\r\n`.
    #[error("not RESP: bulk string at offset {offset} is not terminated by CRLF")]
    Unterminated {
        /// Where the bulk string's header starts.
        offset: usize,
    },
    /// A RESP3 streamed string or aggregate (`$?`, `*?`, …).
    #[error("streamed RESP3 types (`{byte}?`) are not supported by the gate (Redis never sends them)", byte = *byte as char)]
    Streamed {
        /// The type byte.
        byte: u8,
    },
    /// A null frame (`_`) with content.
    #[error("not RESP: null frame with content at offset {offset}")]
    BadNull {
        /// Where the frame starts.
        offset: usize,
    },
    /// A client request that is neither an array of bulk strings nor an
    /// inline command.
    #[error("protocol error: {0}")]
    BadRequest(String),
}

/// The length of the first complete RESP frame in `buf`, or `None` when
/// `buf` holds only a prefix of one ("need more bytes").
///
/// An attribute frame (`|`) is counted together with the frame it
/// prefixes, so the result is always one whole reply. Push frames (`>`) are
/// frames of their own; tell them apart with [`is_push`]. Never reads past
/// the first frame. For a stream that arrives in pieces, [`Splitter`] does
/// the same without rescanning what it has already seen.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    Splitter::default().next_len(buf)
}

/// A resumable [`frame_len`]: it remembers how far into an incomplete
/// frame it got, so that a large reply arriving in many reads is scanned
/// once, not once per read.
///
/// Contract: between a call that returned `Ok(None)` and the next call,
/// the caller may only append bytes to the buffer; after `Ok(Some(n))` (or
/// an error) the splitter starts afresh, and the caller removes the first
/// `n` bytes before the next call.
#[derive(Debug, Clone, Default)]
pub struct Splitter {
    /// Where the next element of the current frame starts.
    pos: usize,
    /// How many elements the current frame still needs; 0 when no frame
    /// is in progress. Counting instead of recursing keeps deep nesting
    /// from overflowing the stack.
    pending: u64,
}

impl Splitter {
    /// The length of the first complete frame in `buf`, or `None` when it
    /// is not complete yet (see the type's contract).
    pub fn next_len(&mut self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        if self.pending == 0 {
            self.pos = 0;
            self.pending = 1;
        }
        while self.pending > 0 {
            match element(buf, self.pos) {
                Ok(Some((next, children))) => {
                    let Some(pending) = (self.pending - 1).checked_add(children) else {
                        *self = Splitter::default();
                        return Err(FrameError::BadLength {
                            text: "element count overflows".into(),
                            offset: next,
                        });
                    };
                    self.pos = next;
                    self.pending = pending;
                }
                Ok(None) => return Ok(None),
                Err(e) => {
                    *self = Splitter::default();
                    return Err(e);
                }
            }
        }
        Ok(Some(std::mem::take(&mut self.pos)))
    }
}

/// One element at `pos`: where the next one starts and how many elements
/// it needs after it (an aggregate's children), or `None` if it is not all
/// in `buf` yet.
fn element(buf: &[u8], pos: usize) -> Result<Option<(usize, u64)>, FrameError> {
    let Some(&kind) = buf.get(pos) else {
        return Ok(None);
    };
    let Some(cr) = find_crlf(buf, pos + 1) else {
        return Ok(None);
    };
    let line = &buf[pos + 1..cr];
    let body = cr + 2;
    match kind {
        b'+' | b'-' | b':' | b',' | b'#' | b'(' => Ok(Some((body, 0))),
        b'_' => {
            if line.is_empty() {
                Ok(Some((body, 0)))
            } else {
                Err(FrameError::BadNull { offset: pos })
            }
        }
        b'$' | b'=' | b'!' => {
            let Some(len) = parse_len(kind, line, pos)? else {
                return Ok(Some((body, 0))); // null bulk string
            };
            let len = usize::try_from(len).map_err(|_| bad_length(line, pos))?;
            let end = body.checked_add(len).ok_or_else(|| bad_length(line, pos))?;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(FrameError::Unterminated { offset: pos });
            }
            Ok(Some((end + 2, 0)))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let Some(count) = parse_len(kind, line, pos)? else {
                return Ok(Some((body, 0))); // null array
            };
            let count = u64::try_from(count).map_err(|_| bad_length(line, pos))?;
            let children = match kind {
                b'%' => count.checked_mul(2),
                // The attribute's key/value pairs, then the frame it prefixes.
                b'|' => count.checked_mul(2).and_then(|c| c.checked_add(1)),
                _ => Some(count),
            };
            let children = children.ok_or_else(|| bad_length(line, pos))?;
            Ok(Some((body, children)))
        }
        byte => Err(FrameError::UnknownType { byte, offset: pos }),
    }
}

/// Whether `frame` (a complete frame from [`frame_len`]) is a RESP3 push
/// frame: out-of-band data from the server, never the reply to a command.
pub fn is_push(frame: &[u8]) -> bool {
    frame.first() == Some(&b'>')
}

/// One request read from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// How many bytes of the buffer it took.
    pub len: usize,
    /// Its arguments; empty for an empty inline line or `*0`, which Redis
    /// ignores without a reply.
    pub args: Vec<Vec<u8>>,
    /// Whether it was an inline command (forward it re-encoded as an array,
    /// so that the server sees exactly the recorded arguments).
    pub inline: bool,
}

/// Reads the first request in `buf`: an array of bulk strings
/// (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or an inline command (`PING\r\n`,
/// split on whitespace). `None` when `buf` holds only a prefix of one.
pub fn parse_request(buf: &[u8]) -> Result<Option<Request>, FrameError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    if first != b'*' {
        let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
            if buf.len() > MAX_INLINE {
                return Err(FrameError::BadRequest("too big inline request".into()));
            }
            return Ok(None);
        };
        let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
        let args = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|a| !a.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        return Ok(Some(Request {
            len: nl + 1,
            args,
            inline: true,
        }));
    }
    let Some(cr) = find_crlf(buf, 1) else {
        return Ok(None);
    };
    let count = parse_int(&buf[1..cr])
        .ok_or_else(|| FrameError::BadRequest("invalid multibulk length".into()))?;
    let mut pos = cr + 2;
    if count <= 0 {
        return Ok(Some(Request {
            len: pos,
            args: Vec::new(),
            inline: false,
        }));
    }
    let mut args = Vec::new();
    for _ in 0..count {
        let Some(&kind) = buf.get(pos) else {
            return Ok(None);
        };
        if kind != b'$' {
            return Err(FrameError::BadRequest(format!(
                "expected '$', got '{}'",
                kind.escape_ascii()
            )));
        }
        let Some(cr) = find_crlf(buf, pos + 1) else {
            return Ok(None);
        };
        let len = parse_int(&buf[pos + 1..cr])
            .filter(|&n| (0..=MAX_BULK).contains(&n))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| FrameError::BadRequest("invalid bulk length".into()))?;
        let data = cr + 2;
        let end = data + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(FrameError::BadRequest(
                "bulk string not terminated by CRLF".into(),
            ));
        }
        args.push(buf[data..end].to_vec());
        pos = end + 2;
    }
    Ok(Some(Request {
        len: pos,
        args,
        inline: false,
    }))
}

/// Encodes `args` as a RESP array of bulk strings.
pub fn encode_request(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The index of the `\r` of the first `\r\n` at or after `from`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    rest.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
}

/// A length or count: `Some(n >= 0)`, `None` for `-1` (null), an error for
/// anything else (including the streamed marker `?`).
fn parse_len(kind: u8, line: &[u8], offset: usize) -> Result<Option<i64>, FrameError> {
    if line == b"?" {
        return Err(FrameError::Streamed { byte: kind });
    }
    match parse_int(line) {
        Some(-1) => Ok(None),
        Some(n) if (0..=MAX_BULK).contains(&n) => Ok(Some(n)),
        _ => Err(bad_length(line, offset)),
    }
}

fn parse_int(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn bad_length(line: &[u8], offset: usize) -> FrameError {
    FrameError::BadLength {
        text: String::from_utf8_lossy(line).into_owned(),
        offset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One example frame of every type, nested ones included.
    const FRAMES: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR unknown command\r\n",
        b":-42\r\n",
        b"$5\r\nhello\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"$4\r\na\r\nb\r\n", // CRLF inside a bulk string is data
        b"*-1\r\n",
        b"*0\r\n",
        b"*2\r\n$1\r\na\r\n:1\r\n",
        b"*2\r\n*1\r\n+x\r\n%1\r\n+k\r\n~2\r\n:1\r\n:2\r\n",
        b"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n_\r\n",
        b"~3\r\n+a\r\n+b\r\n+c\r\n",
        b">3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n:0\r\n",
        b"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
        b"_\r\n",
        b",3.14\r\n",
        b",inf\r\n",
        b"#t\r\n",
        b"#f\r\n",
        b"(3492890328409238509324850943850943825024385\r\n",
        b"=15\r\ntxt:Some string\r\n",
        b"!21\r\nSYNTAX invalid syntax\r\n",
        b"*3\r\n$-1\r\n*-1\r\n_\r\n",
    ];

    #[test]
    fn every_type_is_one_whole_frame() {
        for frame in FRAMES {
            assert_eq!(
                frame_len(frame),
                Ok(Some(frame.len())),
                "{}",
                frame.escape_ascii()
            );
        }
    }

    #[test]
    fn every_prefix_needs_more() {
        for frame in FRAMES {
            for cut in 0..frame.len() {
                assert_eq!(
                    frame_len(&frame[..cut]),
                    Ok(None),
                    "{} cut at {cut}",
                    frame.escape_ascii()
                );
            }
        }
    }

    #[test]
    fn pipelined_frames_split_one_by_one() {
        let all: Vec<u8> = FRAMES.concat();
        let mut rest = &all[..];
        for frame in FRAMES {
            let n = frame_len(rest).unwrap().unwrap();
            assert_eq!(&rest[..n], *frame);
            rest = &rest[n..];
        }
        assert!(rest.is_empty());
        assert_eq!(frame_len(rest), Ok(None));
    }

    #[test]
    fn pipelined_frames_split_at_every_boundary() {
        // Feed the concatenation in two pieces cut at every byte; a reader
        // that consumes whole frames as they complete must see them all.
        let all: Vec<u8> = FRAMES.concat();
        for cut in 0..=all.len() {
            let mut buf = Vec::new();
            let mut seen = Vec::new();
            for piece in [&all[..cut], &all[cut..]] {
                buf.extend_from_slice(piece);
                while let Some(n) = frame_len(&buf).unwrap() {
                    seen.push(buf.drain(..n).collect::<Vec<u8>>());
                }
            }
            assert!(buf.is_empty(), "cut {cut}");
            assert_eq!(seen.len(), FRAMES.len(), "cut {cut}");
            for (got, want) in seen.iter().zip(FRAMES) {
                assert_eq!(got.as_slice(), *want, "cut {cut}");
            }
        }
    }

    #[test]
    fn splitter_resumes_byte_by_byte() {
        let all: Vec<u8> = FRAMES.concat();
        let mut splitter = Splitter::default();
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        for byte in &all {
            buf.push(*byte);
            while let Some(n) = splitter.next_len(&buf).unwrap() {
                seen.push(buf.drain(..n).collect::<Vec<u8>>());
            }
        }
        assert!(buf.is_empty());
        assert_eq!(seen, FRAMES.iter().map(|f| f.to_vec()).collect::<Vec<_>>());
    }

    #[test]
    fn splitter_starts_afresh_after_an_error() {
        let mut splitter = Splitter::default();
        assert_eq!(splitter.next_len(b"*2\r\n:1\r\n"), Ok(None));
        assert!(splitter.next_len(b"*2\r\n:1\r\n?\r\n").is_err());
        assert_eq!(splitter.next_len(b"+OK\r\n"), Ok(Some(5)));
    }

    #[test]
    fn push_frames_are_recognised() {
        assert!(is_push(b">2\r\n+a\r\n+b\r\n"));
        assert!(!is_push(b"*2\r\n+a\r\n+b\r\n"));
        assert!(!is_push(b""));
    }

    #[test]
    fn garbage_is_refused() {
        assert!(matches!(
            frame_len(b"?what\r\n"),
            Err(FrameError::UnknownType { byte: b'?', .. })
        ));
        assert!(matches!(
            frame_len(b"$abc\r\n"),
            Err(FrameError::BadLength { .. })
        ));
        assert!(matches!(
            frame_len(b"*-2\r\n"),
            Err(FrameError::BadLength { .. })
        ));
        assert!(matches!(
            frame_len(b"$3\r\nabcd\r\n"),
            Err(FrameError::Unterminated { .. })
        ));
        assert!(matches!(
            frame_len(b"$?\r\n;4\r\nabcd\r\n;0\r\n"),
            Err(FrameError::Streamed { byte: b'$' })
        ));
        assert!(matches!(
            frame_len(b"_x\r\n"),
            Err(FrameError::BadNull { .. })
        ));
        // A huge count is fine while the bytes are not there yet.
        assert_eq!(frame_len(b"*1000000\r\n:1\r\n"), Ok(None));
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let mut frame = b"*1\r\n".repeat(100_000);
        frame.extend_from_slice(b":1\r\n");
        assert_eq!(frame_len(&frame), Ok(Some(frame.len())));
    }

    #[test]
    fn requests_as_arrays() {
        let raw = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv\n\r\n";
        let req = parse_request(raw).unwrap().unwrap();
        assert_eq!(req.len, raw.len());
        assert_eq!(
            req.args,
            vec![b"SET".to_vec(), b"k".to_vec(), b"v\n".to_vec()]
        );
        assert!(!req.inline);
        for cut in 0..raw.len() {
            assert_eq!(parse_request(&raw[..cut]), Ok(None), "cut {cut}");
        }
        assert_eq!(encode_request(&req.args), raw.to_vec());
    }

    #[test]
    fn pipelined_requests() {
        let raw = b"*1\r\n$4\r\nPING\r\nECHO hi\r\n*0\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let mut rest = &raw[..];
        let mut got = Vec::new();
        while let Some(req) = parse_request(rest).unwrap() {
            got.push((req.args, req.inline));
            rest = &rest[req.len..];
        }
        assert!(rest.is_empty());
        assert_eq!(
            got,
            vec![
                (vec![b"PING".to_vec()], false),
                (vec![b"ECHO".to_vec(), b"hi".to_vec()], true),
                (vec![], false),
                (vec![], true),
                (vec![b"GET".to_vec(), b"k".to_vec()], false),
            ]
        );
    }

    #[test]
    fn inline_requests() {
        let req = parse_request(b"PING\r\n").unwrap().unwrap();
        assert_eq!(
            (req.len, req.args, req.inline),
            (6, vec![b"PING".to_vec()], true)
        );
        let req = parse_request(b"set  k   v\n").unwrap().unwrap();
        assert_eq!(
            req.args,
            vec![b"set".to_vec(), b"k".to_vec(), b"v".to_vec()]
        );
        assert_eq!(parse_request(b"PIN"), Ok(None));
        assert!(parse_request(&vec![b'a'; MAX_INLINE + 1]).is_err());
    }

    #[test]
    fn bad_requests() {
        assert!(parse_request(b"*1\r\n:1\r\n").is_err());
        assert!(parse_request(b"*x\r\n").is_err());
        assert!(parse_request(b"*1\r\n$-1\r\n").is_err());
        assert!(parse_request(b"*1\r\n$1\r\nab\r\n").is_err());
    }
}
