//! Request parsing of `ringlab serve`: the prebuilt responses and
//! [`answer`], which turns the requests buffered on a connection into
//! responses.

/// A request head larger than this is answered 431 and the connection closed.
pub const MAX_REQUEST_HEAD: usize = 64 * 1024;

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

/// What a parsed request head says about framing and the connection.
struct Head {
    body: usize,
    close: bool,
    bad: bool,
}

fn read_head(req: &httparse::Request) -> Head {
    let mut h = Head {
        body: 0,
        close: req.version == Some(0),
        bad: false,
    };
    for hd in req.headers.iter() {
        if hd.name.eq_ignore_ascii_case("content-length") {
            match std::str::from_utf8(hd.value)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                Some(l) => h.body = l,
                None => h.bad = true,
            }
        } else if hd.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked request bodies are out of scope.
            h.bad = true;
        } else if hd.name.eq_ignore_ascii_case("connection") {
            let v = hd.value.to_ascii_lowercase();
            if v.windows(5).any(|w| w == b"close") {
                h.close = true;
            } else if v.windows(10).any(|w| w == b"keep-alive") {
                h.close = false;
            }
        }
    }
    h
}

/// Parses the requests in `rbuf`, appends one response each to `out`.
/// Returns (bytes consumed, requests, close after writing).
pub fn answer(rbuf: &[u8], out: &mut Vec<u8>, resp: &Responses) -> (usize, u64, bool) {
    let mut used = 0;
    let mut n = 0;
    loop {
        let buf = &rbuf[used..];
        if buf.is_empty() {
            return (used, n, false);
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(h)) => {
                let head = read_head(&req);
                if head.bad {
                    out.extend_from_slice(BAD_REQUEST);
                    return (rbuf.len(), n, true);
                }
                if buf.len() < h + head.body {
                    return (used, n, false);
                }
                let head_only = req.method == Some("HEAD");
                out.extend_from_slice(if head_only {
                    &resp.head_only
                } else {
                    &resp.full
                });
                used += h + head.body;
                n += 1;
                if head.close {
                    return (rbuf.len(), n, true);
                }
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > MAX_REQUEST_HEAD {
                    out.extend_from_slice(HEAD_TOO_LARGE);
                    return (rbuf.len(), n, true);
                }
                return (used, n, false);
            }
            Err(_) => {
                out.extend_from_slice(BAD_REQUEST);
                return (rbuf.len(), n, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_pipelined_requests_with_bodies_and_close() {
        let r = Responses::new(3);
        let mut out = Vec::new();
        let reqs = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\n";
        let (used, n, close) = answer(reqs, &mut out, &r);
        assert_eq!(n, 2);
        assert!(!close);
        assert_eq!(used, reqs.len() - b"GET / HTTP/1.1\r\n".len());
        assert_eq!(out, [r.full.clone(), r.full.clone()].concat());
        out.clear();
        let (_, n, close) = answer(
            b"HEAD / HTTP/1.1\r\nConnection: close\r\n\r\n",
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
}
