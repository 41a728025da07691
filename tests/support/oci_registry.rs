//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF
//! distribution project) serving 127.0.0.1 only, its storage in a temporary
//! directory, killed when dropped. `scripts/install-test-peers.sh` installs it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct OciRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub host: String,
    dir: tempfile::TempDir,
}

impl OciRegistry {
    pub fn start() -> OciRegistry {
        let binary = "/usr/bin/docker-registry";
        assert!(
            std::path::Path::new(binary).exists(),
            "Debian's docker-registry is not installed: run scripts/install-test-peers.sh"
        );
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let config = dir.path().join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    \
                     enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: clat-test-registry\n",
                    dir.path().join("data").display()
                ),
            )
            .unwrap();
            let mut child = Command::new(binary)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let host = format!("127.0.0.1:{port}");
            for _ in 0..200 {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if let Ok(mut stream) = std::net::TcpStream::connect(&host) {
                    use std::io::{Read, Write};
                    let _ = stream.write_all(b"GET /v2/ HTTP/1.0\r\n\r\n");
                    let mut answer = String::new();
                    let _ = stream.read_to_string(&mut answer);
                    if answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200") {
                        return OciRegistry { child, host, dir };
                    }
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("docker-registry did not start on 127.0.0.1");
    }

    /// `oci://127.0.0.1:PORT/REPO:TAG`.
    pub fn reference(&self, repository_and_tag: &str) -> String {
        format!("oci://{}/{repository_and_tag}", self.host)
    }

    /// Where the registry keeps the bytes of the blob `sha256:HEX`.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir.path().join(format!("data/docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]))
    }
}

impl Drop for OciRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
