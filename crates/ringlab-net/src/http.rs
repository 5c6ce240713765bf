//! Incremental HTTP/1.1 response parsing: the head with `httparse`, the body
//! framed by Content-Length, chunked transfer coding or the end of the
//! connection. Bytes arrive in whatever pieces the socket gives; nothing is
//! copied except a head split across reads.

/// A response head larger than this is refused (nginx's own default for
/// request heads is 8 KiB; 64 KiB leaves room for fat cookies).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;
/// The longest head the parser remembers (see `ResponseParser::memo`): a
/// connection keeps at most this much, however large the heads it reads.
const MEMO_HEAD_BYTES: usize = 1024;
/// A chunk-size line or trailer line longer than this is garbage.
const MAX_LINE_BYTES: usize = 4096;

/// Why a response could not be parsed; the connection is unusable after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not an HTTP/1.x response head.
    Garbage,
    /// The head grew beyond [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`].
    HeadTooLarge,
    /// Content-Length that is not a number, or conflicting framing.
    BadLength,
    /// A malformed chunk size or chunk delimiter.
    BadChunk,
}

/// The connection ended in the middle of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated;

/// A complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The server will close the connection after this response.
    pub close: bool,
}

/// What the caller does after [`ResponseParser::feed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading on this connection.
    Continue,
    /// The server said it closes: stop using the connection.
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size {
        value: u64,
        digits: u32,
        ext: bool,
        line: usize,
    },
    Data(u64),
    DataCr,
    DataLf,
    Trailer {
        line: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body {
        status: u16,
        close: bool,
        body: Body,
    },
}

/// A response's headers and body, kept only when a script's `response()`
/// wants them (wrk parses them only then, too).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Captured {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// One connection's parser; reused across its keep-alive responses.
#[derive(Debug)]
pub struct ResponseParser {
    head: Vec<u8>,
    state: State,
    /// `Some` when headers and bodies are kept for the caller.
    capture: Option<Box<Captured>>,
    /// The last final head parsed whole, byte for byte, with the state it
    /// led to and whether it answered a HEAD request. A server sends the
    /// same head again and again; parsing is a function of the head's
    /// bytes alone (the parser reads no byte past the blank line that ends
    /// a head), so a head equal to this one has this result, and one
    /// comparison replaces the parse (about 45% of the client's own CPU
    /// time on a small response).
    memo: Vec<u8>,
    memo_state: Option<(bool, State)>,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            head: Vec::new(),
            state: State::Head,
            capture: None,
            memo: Vec::new(),
            memo_state: None,
        }
    }

    /// Keeps each response's headers and body for [`Self::feed_with`].
    pub fn capture(&mut self) {
        self.capture = Some(Box::default());
    }

    /// Forgets a partial response (after a reconnect).
    pub fn reset(&mut self) {
        self.head.clear();
        self.state = State::Head;
        if let Some(c) = &mut self.capture {
            c.headers.clear();
            c.body.clear();
        }
    }

    /// Whether a response has begun and not ended.
    pub fn mid_response(&self) -> bool {
        !(self.state == State::Head && self.head.is_empty())
    }

    /// Feeds bytes read from the socket; `done` is called for every
    /// complete response. `head_request` marks responses without a body.
    pub fn feed(
        &mut self,
        data: &[u8],
        head_request: bool,
        mut done: impl FnMut(Response),
    ) -> Result<Flow, ParseError> {
        self.feed_with(data, head_request, |r, _| done(r))
    }

    /// [`Self::feed`], handing each response's headers and body to `done`
    /// when [`Self::capture`] was called.
    pub fn feed_with(
        &mut self,
        data: &[u8],
        head_request: bool,
        mut done: impl FnMut(Response, Option<&Captured>),
    ) -> Result<Flow, ParseError> {
        let mut cap = self.capture.take();
        let r = self.feed_inner(data, head_request, cap.as_deref_mut(), &mut done);
        self.capture = cap;
        r
    }

    fn feed_inner(
        &mut self,
        mut data: &[u8],
        head_request: bool,
        mut cap: Option<&mut Captured>,
        done: &mut impl FnMut(Response, Option<&Captured>),
    ) -> Result<Flow, ParseError> {
        while !data.is_empty() {
            match self.state {
                State::Head => {
                    let used = self.parse_head(data, head_request, cap.as_deref_mut())?;
                    match used {
                        None => return Ok(Flow::Continue),
                        Some(n) => data = &data[n..],
                    }
                    // A head that ends the response (no body).
                    if let State::Body {
                        status,
                        close,
                        body: Body::Length(0),
                    } = self.state
                    {
                        self.state = State::Head;
                        done(Response { status, close }, cap.as_deref());
                        clear(cap.as_deref_mut());
                        if close {
                            return Ok(Flow::Close);
                        }
                    }
                }
                State::Body {
                    status,
                    close,
                    body,
                } => {
                    let (used, next) =
                        advance_body(body, data, cap.as_deref_mut().map(|c| &mut c.body))?;
                    data = &data[used..];
                    match next {
                        Some(b) => {
                            self.state = State::Body {
                                status,
                                close,
                                body: b,
                            }
                        }
                        None => {
                            self.state = State::Head;
                            done(Response { status, close }, cap.as_deref());
                            clear(cap.as_deref_mut());
                            if close {
                                return Ok(Flow::Close);
                            }
                        }
                    }
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// What was captured of the response [`Self::eof`] just ended.
    pub fn captured(&self) -> Option<&Captured> {
        self.capture.as_deref()
    }

    /// The peer closed the connection: a body framed by the close ends
    /// here (`Ok(Some)`), a partial response is an error, nothing pending
    /// is a clean close (`Ok(None)`).
    pub fn eof(&mut self) -> Result<Option<Response>, Truncated> {
        match self.state {
            State::Body {
                status,
                body: Body::UntilClose,
                ..
            } => {
                self.state = State::Head;
                Ok(Some(Response {
                    status,
                    close: true,
                }))
            }
            _ if self.mid_response() => Err(Truncated),
            _ => Ok(None),
        }
    }

    /// Parses a head from `data` (plus any carried-over bytes). Returns how
    /// many bytes of `data` it used, or `None` when it needs more.
    fn parse_head(
        &mut self,
        data: &[u8],
        head_request: bool,
        cap: Option<&mut Captured>,
    ) -> Result<Option<usize>, ParseError> {
        let carried = self.head.len();
        if carried == 0 && cap.is_none() {
            if let Some((hr, state)) = self.memo_state {
                let l = self.memo.len();
                if hr == head_request && data.len() >= l && data[..l] == self.memo[..] {
                    self.state = state;
                    return Ok(Some(l));
                }
            }
        }
        if carried > 0 {
            let room = (MAX_HEAD_BYTES + 1).saturating_sub(carried);
            self.head.extend_from_slice(&data[..data.len().min(room)]);
        }
        let buf: &[u8] = if carried > 0 { &self.head } else { data };
        // Left uninitialised: httparse writes only the headers it finds, so
        // the 64-entry array (2 KiB) is not cleared on every response.
        let mut headers = [std::mem::MaybeUninit::<httparse::Header>::uninit(); MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            buf,
            &mut headers,
        );
        let n = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_HEAD_BYTES {
                    return Err(ParseError::HeadTooLarge);
                }
                if carried == 0 {
                    self.head.extend_from_slice(data);
                }
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
            Err(_) => return Err(ParseError::Garbage),
        };
        if n > MAX_HEAD_BYTES {
            return Err(ParseError::HeadTooLarge);
        }
        let status = resp.code.unwrap_or(0);
        let version = resp.version.unwrap_or(1);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut conn_close = version == 0;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                length = Some(content_length(length, h.value).ok_or(ParseError::BadLength)?);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = has_token(h.value, b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                if has_token(h.value, b"close") {
                    conn_close = true;
                } else if has_token(h.value, b"keep-alive") {
                    conn_close = false;
                }
            }
        }
        if let Some(c) = cap {
            c.headers.clear();
            c.body.clear();
            for h in resp.headers.iter() {
                c.headers.push((
                    h.name.to_string(),
                    String::from_utf8_lossy(h.value).into_owned(),
                ));
            }
        }
        let used = n - carried;
        // The head's bytes for the memo; its state is set below, only for
        // a final response.
        self.memo_state = None;
        self.memo.clear();
        if n <= MEMO_HEAD_BYTES {
            self.memo.extend_from_slice(&buf[..n]);
        }
        self.head.clear();
        // Interim responses (100 Continue) are not the answer: skip them.
        if (100..200).contains(&status) && status != 101 {
            self.state = State::Head;
            return Ok(Some(used));
        }
        let body = if head_request || status == 204 || status == 304 || status == 101 {
            Body::Length(0)
        } else if chunked {
            Body::Chunked(Chunk::Size {
                value: 0,
                digits: 0,
                ext: false,
                line: 0,
            })
        } else if let Some(l) = length {
            Body::Length(l)
        } else {
            conn_close = true;
            Body::UntilClose
        };
        self.state = State::Body {
            status,
            close: conn_close,
            body,
        };
        if !self.memo.is_empty() {
            self.memo_state = Some((head_request, self.state));
        }
        Ok(Some(used))
    }
}

/// One Content-Length field line, given the value of those before it
/// (`seen`). RFC 9112 §6.3: the value is 1*DIGIT; a list or repeated field
/// whose values all agree stands for that value. `None` for anything else
/// (`+1`, `-1`, `0x10`, an empty value, an overflow, values that differ):
/// the message framing is invalid.
pub fn content_length(seen: Option<u64>, value: &[u8]) -> Option<u64> {
    let mut agreed = seen;
    for part in value.split(|&b| b == b',') {
        let digits = part.trim_ascii();
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let v = std::str::from_utf8(digits).ok()?.parse::<u64>().ok()?;
        if agreed.is_some_and(|a| a != v) {
            return None;
        }
        agreed = Some(v);
    }
    agreed
}

fn clear(cap: Option<&mut Captured>) {
    if let Some(c) = cap {
        c.headers.clear();
        c.body.clear();
    }
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// The most of one body kept for a script's `response()`: a larger (or
/// endless) body is read to its end, and the script gets its first
/// `BODY_KEPT_MAX` bytes.
pub const BODY_KEPT_MAX: usize = 16 << 20;

/// Keeps `data` in `sink` up to [`BODY_KEPT_MAX`].
fn keep(sink: &mut Vec<u8>, data: &[u8]) {
    let room = BODY_KEPT_MAX.saturating_sub(sink.len());
    sink.extend_from_slice(&data[..room.min(data.len())]);
}

/// Consumes body bytes; returns how many it used and the next body state,
/// `None` once the body is complete.
fn advance_body(
    body: Body,
    data: &[u8],
    sink: Option<&mut Vec<u8>>,
) -> Result<(usize, Option<Body>), ParseError> {
    match body {
        Body::Length(rem) => {
            let take = rem.min(data.len() as u64);
            if let Some(s) = sink {
                keep(s, &data[..take as usize]);
            }
            let left = rem - take;
            Ok((take as usize, (left > 0).then_some(Body::Length(left))))
        }
        Body::UntilClose => {
            if let Some(s) = sink {
                keep(s, data);
            }
            Ok((data.len(), Some(Body::UntilClose)))
        }
        Body::Chunked(c) => advance_chunked(c, data, sink),
    }
}

const NEXT_SIZE: Chunk = Chunk::Size {
    value: 0,
    digits: 0,
    ext: false,
    line: 0,
};

/// Chunked transfer coding: chunk data is skipped in one step, the lines
/// around it (size, delimiters, trailers) byte by byte.
fn advance_chunked(
    mut c: Chunk,
    data: &[u8],
    mut sink: Option<&mut Vec<u8>>,
) -> Result<(usize, Option<Body>), ParseError> {
    let mut i = 0;
    while i < data.len() {
        c = match c {
            Chunk::Data(rem) => {
                let take = rem.min((data.len() - i) as u64);
                if let Some(s) = sink.as_deref_mut() {
                    keep(s, &data[i..i + take as usize]);
                }
                i += take as usize;
                if rem == take {
                    Chunk::DataCr
                } else {
                    Chunk::Data(rem - take)
                }
            }
            line => {
                i += 1;
                match line_byte(line, data[i - 1])? {
                    Some(next) => next,
                    None => return Ok((i, None)),
                }
            }
        };
    }
    Ok((i, Some(Body::Chunked(c))))
}

/// One byte of the lines around chunk data; `None` when it ends the body.
fn line_byte(c: Chunk, b: u8) -> Result<Option<Chunk>, ParseError> {
    Ok(Some(match c {
        Chunk::Size {
            value,
            digits,
            ext,
            line,
        } => size_byte(value, digits, ext, line, b)?,
        Chunk::DataCr => match b {
            b'\r' => Chunk::DataLf,
            b'\n' => NEXT_SIZE,
            _ => return Err(ParseError::BadChunk),
        },
        Chunk::DataLf if b == b'\n' => NEXT_SIZE,
        Chunk::DataLf => return Err(ParseError::BadChunk),
        Chunk::Trailer { line } => match b {
            b'\n' if line == 0 => return Ok(None),
            b'\n' => Chunk::Trailer { line: 0 },
            b'\r' => Chunk::Trailer { line },
            _ if line > MAX_LINE_BYTES => return Err(ParseError::BadChunk),
            _ => Chunk::Trailer { line: line + 1 },
        },
        // Data is skipped whole by the caller, never byte by byte.
        Chunk::Data(rem) => Chunk::Data(rem),
    }))
}

/// One byte of a chunk-size line: hex digits, then an optional extension.
fn size_byte(value: u64, digits: u32, ext: bool, line: usize, b: u8) -> Result<Chunk, ParseError> {
    if line > MAX_LINE_BYTES {
        return Err(ParseError::BadChunk);
    }
    let more = |ext| Chunk::Size {
        value,
        digits,
        ext,
        line: line + 1,
    };
    Ok(match b {
        b'\n' if digits == 0 => return Err(ParseError::BadChunk),
        b'\n' if value == 0 => Chunk::Trailer { line: 0 },
        b'\n' => Chunk::Data(value),
        b'\r' => more(true),
        _ if ext => more(ext),
        b';' | b' ' | b'\t' => more(true),
        _ => {
            let d = (b as char).to_digit(16).ok_or(ParseError::BadChunk)?;
            if digits >= 15 {
                return Err(ParseError::BadChunk);
            }
            Chunk::Size {
                value: value * 16 + d as u64,
                digits: digits + 1,
                ext,
                line: line + 1,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(pieces: &[&[u8]], head: bool) -> (Vec<Response>, Result<Flow, ParseError>) {
        let mut p = ResponseParser::new();
        let mut got = Vec::new();
        let mut last = Ok(Flow::Continue);
        for piece in pieces {
            last = p.feed(piece, head, |r| got.push(r));
            if last.is_err() || last == Ok(Flow::Close) {
                break;
            }
        }
        (got, last)
    }

    #[test]
    fn capture_keeps_headers_and_body_of_every_framing() {
        let bytes: &[u8] = b"HTTP/1.1 200 OK\r\nX-Token: abc\r\nContent-Length: 5\r\n\r\nhello\
HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nfoo\r\n4\r\nbar!\r\n0\r\n\r\n";
        for split in 0..bytes.len() {
            let mut p = ResponseParser::new();
            p.capture();
            let mut got = Vec::new();
            for piece in [&bytes[..split], &bytes[split..]] {
                p.feed_with(piece, false, |r, c| {
                    let c = c.expect("capture on");
                    got.push((r.status, c.headers.clone(), c.body.clone()));
                })
                .unwrap();
            }
            assert_eq!(got.len(), 2, "split {split}");
            assert_eq!(got[0].0, 200);
            assert!(got[0]
                .1
                .contains(&("X-Token".to_string(), "abc".to_string())));
            assert_eq!(got[0].2, b"hello");
            assert_eq!(got[1].0, 201);
            assert_eq!(got[1].2, b"foobar!", "split {split}");
        }
        let mut p = ResponseParser::new();
        p.feed_with(
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            false,
            |_, c| assert!(c.is_none(), "no capture unless asked"),
        )
        .unwrap();
    }

    /// Every way of splitting `bytes` in two gives the same responses.
    fn all_splits(bytes: &[u8]) -> Vec<Response> {
        let (whole, r) = parse_all(&[bytes], false);
        assert!(r.is_ok());
        for cut in 0..bytes.len() {
            let (got, r) = parse_all(&[&bytes[..cut], &bytes[cut..]], false);
            assert!(r.is_ok(), "cut {cut}: {r:?}");
            assert_eq!(got, whole, "cut at {cut}");
        }
        // and byte by byte
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_all(&singles, false).0, whole);
        whole
    }

    /// The head memo answers only for a head equal byte for byte to the
    /// last one, for the same kind of request: a stream of heads that
    /// repeat and differ in one byte each parses as a fresh parser per
    /// response would, whole and split at every byte.
    #[test]
    fn repeated_heads_parse_as_fresh_ones() {
        let heads: [&[u8]; 8] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nworld",
            b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello!",
            b"HTTP/1.1 201 OK\r\nContent-Length: 6\r\n\r\nhello!",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 OK\r\nContent-Length: 6\r\n\r\nhello!",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        ];
        let fresh: Vec<Response> = heads
            .iter()
            .flat_map(|h| parse_all(&[h], false).0)
            .collect();
        assert_eq!(fresh.len(), 8);
        assert!(fresh[7].close && !fresh[6].close);
        assert_eq!(fresh[3].status, 201);
        let stream = heads.concat();
        assert_eq!(all_splits(&stream), fresh);
        // A memo made for a GET does not answer a HEAD, nor the reverse.
        let mut p = ResponseParser::new();
        let mut got = Vec::new();
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(p.feed(r, true, |x| got.push(x)), Ok(Flow::Continue));
        assert_eq!(got.len(), 1, "HEAD: no body");
        assert_eq!(p.feed(r, false, |x| got.push(x)), Ok(Flow::Continue));
        assert_eq!(got.len(), 1, "GET: the body of 3 bytes is due");
        assert_eq!(p.feed(b"abc", false, |x| got.push(x)), Ok(Flow::Continue));
        assert_eq!(p.feed(r, true, |x| got.push(x)), Ok(Flow::Continue));
        assert_eq!(got.len(), 3);
        // A head longer than MEMO_HEAD_BYTES is parsed every time, and
        // not kept.
        let long = format!(
            "HTTP/1.1 200 OK\r\nX-Pad: {}\r\nContent-Length: 0\r\n\r\n",
            "a".repeat(MEMO_HEAD_BYTES)
        );
        let mut p = ResponseParser::new();
        for _ in 0..2 {
            assert_eq!(
                p.feed(long.as_bytes(), false, |x| got.push(x)),
                Ok(Flow::Continue)
            );
            assert!(p.memo.is_empty() && p.memo_state.is_none());
        }
        assert_eq!(got.len(), 5);
    }

    #[test]
    fn content_length_keep_alive_pipelined() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        let got = all_splits(two);
        assert_eq!(
            got,
            vec![
                Response {
                    status: 200,
                    close: false
                },
                Response {
                    status: 404,
                    close: false
                }
            ]
        );
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n";
        let got = all_splits(r);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].status, 201);
    }

    #[test]
    fn connection_close_stops_and_http10_closes() {
        let (got, flow) = parse_all(
            &[b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\n"],
            false,
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].close);
        assert_eq!(flow, Ok(Flow::Close));
        let (got, _) = parse_all(&[b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"], false);
        assert!(got[0].close);
    }

    #[test]
    fn body_until_close_ends_at_eof() {
        let mut p = ResponseParser::new();
        let mut n = 0;
        p.feed(b"HTTP/1.1 200 OK\r\n\r\nsome body", false, |_| n += 1)
            .unwrap();
        assert_eq!(n, 0);
        assert_eq!(p.eof().unwrap().unwrap().status, 200);
        assert_eq!(p.eof(), Ok(None));
    }

    #[test]
    fn eof_mid_response_is_an_error() {
        let mut p = ResponseParser::new();
        p.feed(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
            false,
            |_| {},
        )
        .unwrap();
        assert!(p.eof().is_err());
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 20", false, |_| {}).unwrap();
        assert!(p.eof().is_err());
    }

    #[test]
    fn head_and_no_content_have_no_body() {
        let (got, _) = parse_all(
            &[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"],
            true,
        );
        assert_eq!(got.len(), 2);
        let (got, _) = parse_all(
            &[b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"],
            false,
        );
        assert_eq!(
            got,
            vec![Response {
                status: 204,
                close: false
            }]
        );
    }

    #[test]
    fn content_length_is_digits_and_repeats_must_agree() {
        assert_eq!(content_length(None, b"5"), Some(5));
        assert_eq!(content_length(None, b" 5 "), Some(5));
        assert_eq!(content_length(Some(5), b"5"), Some(5));
        assert_eq!(content_length(None, b"5, 5"), Some(5));
        for bad in [
            &b"+1"[..],
            b"-1",
            b"0x10",
            b"",
            b"1 2",
            b"5,",
            b"99999999999999999999",
        ] {
            assert_eq!(content_length(None, bad), None, "{bad:?}");
        }
        assert_eq!(content_length(Some(4), b"5"), None);
        assert_eq!(content_length(None, b"5, 6"), None);
        assert_eq!(
            parse_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx"], false).1,
            Err(ParseError::BadLength)
        );
    }

    #[test]
    fn garbage_oversized_and_bad_framing_are_errors() {
        assert_eq!(
            parse_all(&[b"SSH-2.0-OpenSSH\r\n\r\n"], false).1,
            Err(ParseError::Garbage)
        );
        let mut big = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        big.resize(MAX_HEAD_BYTES + 100, b'a');
        let pieces: Vec<&[u8]> = big.chunks(1000).collect();
        assert_eq!(parse_all(&pieces, false).1, Err(ParseError::HeadTooLarge));
        assert_eq!(
            parse_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"], false).1,
            Err(ParseError::BadLength)
        );
        assert_eq!(
            parse_all(
                &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
                false
            )
            .1,
            Err(ParseError::BadChunk)
        );
        assert_eq!(
            parse_all(
                &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX"],
                false
            )
            .1,
            Err(ParseError::BadChunk)
        );
    }
}
