//! Request parsing of `ringlab serve`: the prebuilt responses and the
//! [`RequestParser`], which turns the requests buffered on a connection into
//! responses. Request bodies are skipped as they arrive, never buffered.

use crate::http::content_length;

/// A request head larger than this is answered 431 and the connection closed.
pub const MAX_REQUEST_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
const HEAD_TOO_LARGE: &[u8] =
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// The prebuilt responses.
pub struct Responses {
    pub full: Vec<u8>,
    pub head_only: Vec<u8>,
}

impl Responses {
    /// 200 with a body of `body` bytes (and its HEAD form).
    pub fn new(body: u64) -> Responses {
        let head = format!("HTTP/1.1 200 OK\r\nServer: ringlab\r\nContent-Length: {body}\r\n\r\n");
        let mut full = head.clone().into_bytes();
        full.resize(full.len() + body as usize, b'x');
        Responses {
            full,
            head_only: head.into_bytes(),
        }
    }
}

/// What a parsed request head says about framing and the connection;
/// `None` when the server must answer 400 (RFC 9112 §3.2, §6.3).
struct Head {
    body: u64,
    close: bool,
}

fn read_head(req: &httparse::Request) -> Option<Head> {
    let mut length = None;
    let mut hosts = 0;
    let mut close = req.version == Some(0);
    for hd in req.headers.iter() {
        if hd.name.eq_ignore_ascii_case("content-length") {
            // Differing or non-digit values (`+1`) leave the framing unknown.
            length = Some(content_length(length, hd.value)?);
        } else if hd.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked request bodies are out of scope.
            return None;
        } else if hd.name.eq_ignore_ascii_case("host") {
            hosts += 1;
        } else if hd.name.eq_ignore_ascii_case("connection") {
            let v = hd.value.to_ascii_lowercase();
            if v.windows(5).any(|w| w == b"close") {
                close = true;
            } else if v.windows(10).any(|w| w == b"keep-alive") {
                close = false;
            }
        }
    }
    // HTTP/1.1 needs exactly one Host; HTTP/1.0 at most one.
    if hosts > 1 || (hosts == 0 && req.version == Some(1)) {
        return None;
    }
    Some(Head {
        body: length.unwrap_or(0),
        close,
    })
}

/// What one call of [`RequestParser::answer`] did.
#[derive(Debug, PartialEq, Eq)]
pub struct Answered {
    /// Bytes of the input used (the rest waits for more bytes or room).
    pub used: usize,
    pub requests: u64,
    /// Close the connection once the responses are written.
    pub close: bool,
}

/// One connection's request parser: remembers how much of a request body
/// is still to be skipped.
#[derive(Debug, Default)]
pub struct RequestParser {
    body_left: u64,
}

impl RequestParser {
    /// Parses the requests in `rbuf` and appends a response for each to
    /// `out`, until `out` holds `out_limit` bytes or more (the rest of
    /// `rbuf` waits until the responses are written).
    pub fn answer(
        &mut self,
        rbuf: &[u8],
        out: &mut Vec<u8>,
        resp: &Responses,
        out_limit: usize,
    ) -> Answered {
        let mut a = Answered {
            used: 0,
            requests: 0,
            close: false,
        };
        loop {
            let skip = self.body_left.min((rbuf.len() - a.used) as u64);
            self.body_left -= skip;
            a.used += skip as usize;
            let buf = &rbuf[a.used..];
            if buf.is_empty() || out.len() >= out_limit {
                return a;
            }
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            let (n, head) = match req.parse(buf) {
                Ok(httparse::Status::Complete(n)) => (n, read_head(&req)),
                Ok(httparse::Status::Partial) if buf.len() <= MAX_REQUEST_HEAD => return a,
                Ok(httparse::Status::Partial) => return a.fail(rbuf, out, HEAD_TOO_LARGE),
                Err(httparse::Error::TooManyHeaders) => return a.fail(rbuf, out, HEAD_TOO_LARGE),
                Err(_) => (0, None),
            };
            let Some(head) = head else {
                return a.fail(rbuf, out, BAD_REQUEST);
            };
            let head_only = req.method == Some("HEAD");
            out.extend_from_slice(if head_only {
                &resp.head_only
            } else {
                &resp.full
            });
            a.used += n;
            a.requests += 1;
            self.body_left = head.body;
            if head.close {
                a.used = rbuf.len();
                a.close = true;
                return a;
            }
        }
    }
}

impl Answered {
    /// An error response, then the connection closes.
    fn fail(mut self, rbuf: &[u8], out: &mut Vec<u8>, response: &[u8]) -> Answered {
        out.extend_from_slice(response);
        self.used = rbuf.len();
        self.close = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(rbuf: &[u8], out: &mut Vec<u8>, r: &Responses) -> (usize, u64, bool) {
        let a = RequestParser::default().answer(rbuf, out, r, usize::MAX);
        (a.used, a.requests, a.close)
    }

    #[test]
    fn answers_pipelined_requests_with_bodies_and_close() {
        let r = Responses::new(3);
        let mut out = Vec::new();
        let reqs = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\n";
        let (used, n, close) = answer(reqs, &mut out, &r);
        assert_eq!(n, 2);
        assert!(!close);
        assert_eq!(used, reqs.len() - b"GET / HTTP/1.1\r\n".len());
        assert_eq!(out, [r.full.clone(), r.full.clone()].concat());
        out.clear();
        let (_, n, close) = answer(
            b"HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            &mut out,
            &r,
        );
        assert_eq!((n, close), (1, true));
        assert_eq!(out, r.head_only);
        out.clear();
        let (_, n, close) = answer(b"\x16\x03\x01garbage\r\n\r\n", &mut out, &r);
        assert_eq!((n, close), (0, true));
        assert!(out.starts_with(b"HTTP/1.1 400"));
    }

    #[test]
    fn bad_framing_and_host_are_400_and_close() {
        let r = Responses::new(0);
        for req in [
            &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"[..],
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\na",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\nab",
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ] {
            let mut out = Vec::new();
            let (used, n, close) = answer(req, &mut out, &r);
            let text = String::from_utf8_lossy(req);
            assert_eq!((used, n, close), (req.len(), 0, true), "{text}");
            assert!(out.starts_with(b"HTTP/1.1 400 "), "{text}");
        }
        // Repeated values that agree are one value; HTTP/1.0 needs no Host.
        let mut out = Vec::new();
        let ok = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nabGET / HTTP/1.0\r\n\r\n";
        assert_eq!(answer(ok, &mut out, &r), (ok.len(), 2, true));
    }

    #[test]
    fn bodies_are_skipped_across_reads_and_output_is_bounded() {
        let r = Responses::new(10);
        let mut p = RequestParser::default();
        let mut out = Vec::new();
        let head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n";
        let a = p.answer(head, &mut out, &r, usize::MAX);
        assert_eq!((a.used, a.requests), (head.len(), 1));
        let body = vec![b'z'; 4096];
        for _ in 0..244 {
            assert_eq!(p.answer(&body, &mut out, &r, usize::MAX).used, 4096);
        }
        let rest = [
            &body[..1000000 - 244 * 4096],
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        ]
        .concat();
        let a = p.answer(&rest, &mut out, &r, usize::MAX);
        assert_eq!((a.used, a.requests), (rest.len(), 1));
        // Output stops at the limit; the rest of the input waits.
        let one = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let many = one.repeat(100);
        out.clear();
        let a = p.answer(&many, &mut out, &r, 10 * r.full.len());
        assert_eq!((a.used, a.requests), (10 * one.len(), 10));
        assert_eq!(out.len(), 10 * r.full.len());
    }
}
