//! A small HTTP/1.1 server on 127.0.0.1 for the capability-grant tests. It
//! counts every connection it accepts (so a test can see that none was made)
//! and records each request's method, path and headers. Routes:
//! `/json` (a JSON document), `/redirect?to=URL` (302), `/big?bytes=N` (a body
//! with its length), `/stream?bytes=N` (a body without a length, ended by
//! closing), `/hang` (never answers), `/header?name=X` (the value of request
//! header X), anything else 404.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the server read.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body_bytes: usize,
}

pub struct HttpServer {
    pub port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<SeenRequest>>>,
}

/// The JSON document `/json` serves.
pub const JSON_DOCUMENT: &str = r#"{"name":"clat","items":[1,2,3],"nested":{"ok":true},"count":3}"#;

impl HttpServer {
    pub fn start() -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (c, r) = (Arc::clone(&connections), Arc::clone(&requests));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let r = Arc::clone(&r);
                std::thread::spawn(move || serve(stream, port, &r));
            }
        });
        HttpServer { port, connections, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<SeenRequest> {
        self.requests.lock().unwrap().clone()
    }
}

fn query<'a>(path: &'a str, key: &str) -> Option<&'a str> {
    let (_, query) = path.split_once('?')?;
    query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

fn serve(stream: TcpStream, _port: u16, requests: &Mutex<Vec<SeenRequest>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("/").to_string());
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let length: usize =
            headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let header_value = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let route = path.split('?').next().unwrap_or("/").to_string();
        let seen = SeenRequest { method, path: path.clone(), headers: headers.clone(), body_bytes: length };
        requests.lock().unwrap().push(seen);
        let respond = |out: &mut TcpStream, status: &str, extra: &str, body: &[u8]| {
            let head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n{extra}\r\n", body.len());
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(body);
        };
        match route.as_str() {
            "/json" => respond(&mut out, "200 OK", "content-type: application/json\r\n", JSON_DOCUMENT.as_bytes()),
            "/redirect" => {
                let to = query(&path, "to").unwrap_or("/json").to_string();
                respond(&mut out, "302 Found", &format!("location: {to}\r\n"), b"");
            }
            "/big" => {
                let n: usize = query(&path, "bytes").and_then(|v| v.parse().ok()).unwrap_or(0);
                respond(&mut out, "200 OK", "", &vec![b'b'; n]);
            }
            "/stream" => {
                let n: usize = query(&path, "bytes").and_then(|v| v.parse().ok()).unwrap_or(0);
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
                let chunk = vec![b's'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let take = left.min(chunk.len());
                    if out.write_all(&chunk[..take]).is_err() {
                        return;
                    }
                    left -= take;
                }
                return;
            }
            "/hang" => {
                std::thread::sleep(Duration::from_secs(60));
                return;
            }
            "/header" => {
                let value = query(&path, "name").and_then(header_value).unwrap_or_default();
                respond(&mut out, "200 OK", "", value.as_bytes());
            }
            _ => respond(&mut out, "404 Not Found", "", b"not found"),
        }
    }
}
