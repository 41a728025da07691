//! Plugins in OCI registries: `clat plugin push DIR oci://REGISTRY/REPO:TAG`
//! publishes a WASM plugin package in the Wasm OCI artifact layout that `wkg`
//! and Wassette use — a config of media type `application/vnd.wasm.config.v0+json`
//! (architecture `wasm`, os `wasip2`, the layer digests and the component's
//! imports and exports), the component as an `application/wasm` layer,
//! `clat-plugin.toml` as a layer of its own media type and, for a plain
//! component, its `wit/` as one binary WIT package (its functions' docs) — and
//! `pull` fetches one into a package directory that `clat plugin install` then
//! installs as any other, with the registry reference and the manifest digest
//! it came from. An artifact with no manifest layer (a component `wkg`
//! published) is pulled as a bare component, named after its repository.
//!
//! The `oci-client` crate speaks the protocol: references, the token
//! handshake, pushing. The two downloads of a pull — the manifest and each
//! layer — go through one bounded fetch of this module, because the crate's
//! client reads a manifest whole and follows every redirect: a manifest over
//! `OCI_MANIFEST_MAX_BYTES`, a layer declared or streamed past
//! `OCI_LAYER_MAX_BYTES`, a stream silent for `OCI_READ_TIMEOUT`, a pull past
//! `OCI_PULL_TIMEOUT`, more than `OCI_REDIRECTS_MAX` redirects, a manifest
//! redirected off the registry's host or a layer redirected to plain http
//! elsewhere all fail with the bound named. A tag is resolved to a digest once;
//! every layer is then fetched by digest and its bytes checked against it.
//! Credentials come from the Docker config (`$DOCKER_CONFIG/config.json` or
//! `~/.docker/config.json`, its credential helpers included) when it has the
//! registry, else the pull is anonymous; they are never shown, and go only to
//! the registry's host and the token service it names — and to that only over
//! https (or on this machine).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use sha2::{Digest, Sha256};

use crate::limits::{
    OCI_CHALLENGE_MAX_BYTES, OCI_LAYER_MAX_BYTES, OCI_MANIFEST_MAX_BYTES, OCI_PULL_TIMEOUT, OCI_READ_TIMEOUT,
    OCI_REDIRECTS_MAX,
};
use crate::supply::download::{BodyError, bounded_body, error_chain};
use crate::supply::packages::{MANIFEST, Manifest, PackageKind};
use crate::wasm::plain::WIT_DIR;

/// The scheme of a plugin's registry reference.
pub use crate::supply::packages::OCI_SCHEME;
/// The Wasm OCI artifact's config media type (CNCF Wasm OCI artifact layout, as `wkg` writes it).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer's media type.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The media type of the layer holding `clat-plugin.toml`.
pub const PLUGIN_MANIFEST_MEDIA_TYPE: &str = "application/vnd.artec.clat.plugin.manifest.v1+toml";
/// The media type of the layer holding a plain component's `wit/`, as one binary WIT package.
pub const PLUGIN_WIT_MEDIA_TYPE: &str = "application/vnd.artec.clat.plugin.wit.v1+wasm";
/// The title of the WIT layer (`org.opencontainers.image.title`).
const WIT_LAYER_FILE: &str = "wit.wasm";
/// The manifest media types a pull accepts.
const MANIFEST_MEDIA_TYPES: [&str; 2] =
    ["application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"];

/// Why a push or a pull failed.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("{0}")]
    Reference(String),
    #[error("{0}")]
    Package(String),
    #[error("{reference}: {why}")]
    Registry { reference: String, why: String },
    #[error("{reference}: {why}; nothing was installed")]
    Refused { reference: String, why: String },
}

/// A plugin's place in a registry, as `oci://REGISTRY/REPO:TAG` or `…@sha256:…`.
#[derive(Debug, Clone)]
pub struct OciReference {
    /// As the user wrote it (with `oci://`).
    pub text: String,
    pub reference: Reference,
}

impl OciReference {
    pub fn parse(text: &str) -> Result<OciReference, OciError> {
        let bad = |why: String| OciError::Reference(format!("{text:?} is not a plugin's registry reference: {why}"));
        let rest = text.strip_prefix(OCI_SCHEME).ok_or_else(|| bad(format!("it must start with {OCI_SCHEME}")))?;
        if !rest.contains('/') {
            return Err(bad("give oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST)".into()));
        }
        if rest.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("it holds spaces or control characters".into()));
        }
        let reference: Reference = rest.parse().map_err(|e| bad(format!("{e}")))?;
        if reference.digest().is_some_and(|d| !is_sha256_digest(d)) {
            return Err(bad("only sha256 digests (sha256: and 64 hex digits) are accepted".into()));
        }
        Ok(OciReference { text: text.to_string(), reference })
    }

    /// The registry's host (and port), as Docker's config names it.
    pub fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }

    /// The same repository at `digest`.
    pub fn at_digest(&self, digest: &str) -> OciReference {
        let reference = self.reference.clone_with_digest(digest.to_string());
        OciReference { text: format!("{OCI_SCHEME}{}", reference.whole()), reference }
    }

    /// Whether the registry is this machine (spoken to over plain http).
    fn is_loopback(&self) -> bool {
        let registry = self.reference.registry();
        let host = match registry.rsplit_once(':') {
            Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) && !host.ends_with(':') => host,
            _ => registry,
        };
        crate::supply::download::is_loopback_host(host)
    }

    fn scheme(&self) -> &'static str {
        if self.is_loopback() { "http" } else { "https" }
    }
}

/// The credentials for a registry from the Docker config, or anonymous.
/// A helper's failure is named, never its output (it may hold a secret).
pub fn credentials(reference: &OciReference) -> Result<RegistryAuth, OciError> {
    let server = match reference.registry() {
        "index.docker.io" | "registry-1.docker.io" | "docker.io" => "https://index.docker.io/v1/",
        other => other,
    };
    use docker_credential::{CredentialRetrievalError as E, DockerCredential};
    match docker_credential::get_credential(server) {
        Ok(DockerCredential::UsernamePassword(user, password)) => Ok(RegistryAuth::Basic(user, password)),
        Ok(DockerCredential::IdentityToken(token)) => Ok(RegistryAuth::Bearer(token)),
        Err(E::NoCredentialConfigured | E::ConfigNotFound | E::ConfigReadError) => Ok(RegistryAuth::Anonymous),
        Err(E::HelperFailure { helper, .. }) => Err(OciError::Registry {
            reference: reference.text.clone(),
            why: format!("the Docker credential helper docker-credential-{helper} failed for {server}"),
        }),
        Err(e) => Err(OciError::Registry {
            reference: reference.text.clone(),
            why: format!("the Docker config's credentials for {server} cannot be used: {e}"),
        }),
    }
}

fn client(reference: &OciReference) -> Client {
    let protocol = if reference.is_loopback() {
        ClientProtocol::HttpsExcept(vec![reference.reference.registry().to_string()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        read_timeout: Some(OCI_READ_TIMEOUT),
        connect_timeout: Some(Duration::from_secs(10)),
        ..ClientConfig::default()
    })
}

/// The `realm` of a `Bearer` challenge (`Bearer realm="https://…",service="…"`).
fn bearer_realm(challenge: &str) -> Option<String> {
    let rest = challenge.trim().strip_prefix("Bearer ").or_else(|| challenge.trim().strip_prefix("bearer "))?;
    let at = rest.find("realm=\"")? + "realm=\"".len();
    let end = rest[at..].find('"')?;
    Some(rest[at..at + end].to_string())
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits, the only digests CLAT accepts or builds a URL from.
fn is_sha256_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::policy::identity::hex(&Sha256::digest(bytes)))
}

/// What `push` published.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub name: String,
    pub version: String,
    /// The reference pinned to the pushed manifest's digest.
    pub pinned: OciReference,
}

/// Publish the WASM plugin package in `dir` at `reference`.
pub async fn push(dir: &Path, reference: &OciReference) -> Result<Pushed, OciError> {
    let package = |why: String| OciError::Package(format!("package {}: {why}", dir.display()));
    let manifest = crate::supply::packages::read_manifest(dir).map_err(|e| OciError::Package(e.to_string()))?;
    if !manifest.kind.is_wasm() {
        return Err(package(format!(
            "a {} package holds a native executable; only WASM plugins are published to OCI registries",
            manifest.kind.as_str()
        )));
    }
    check_entry_name(&manifest).map_err(package)?;
    let entry = crate::supply::packages::check_entry(dir, &manifest).map_err(|e| OciError::Package(e.to_string()))?;
    let component = std::fs::read(&entry).map_err(|e| package(format!("cannot read {}: {e}", manifest.entry)))?;
    let toml = std::fs::read(dir.join(MANIFEST)).map_err(|e| package(format!("cannot read {MANIFEST}: {e}")))?;
    let interfaces = crate::wasm::imports::read_interfaces(&component).map_err(|e| package(e.to_string()))?;
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [sha256_digest(&component)],
        "component": { "imports": interfaces.imports, "exports": interfaces.exports },
    });
    let title = |file: &str| Some(BTreeMap::from([("org.opencontainers.image.title".to_string(), file.to_string())]));
    let mut layers = vec![
        ImageLayer::new(component, WASM_LAYER_MEDIA_TYPE.to_string(), title(&manifest.entry)),
        ImageLayer::new(toml, PLUGIN_MANIFEST_MEDIA_TYPE.to_string(), title(MANIFEST)),
    ];
    if manifest.kind == PackageKind::Component {
        let wit = crate::wasm::plain::encode_wit(dir).map_err(|e| package(format!("its {WIT_DIR}/: {e}")))?;
        layers.extend(wit.map(|wit| ImageLayer::new(wit, PLUGIN_WIT_MEDIA_TYPE.to_string(), title(WIT_LAYER_FILE))));
    }
    let config = Config::new(serde_json::to_vec(&config).expect("JSON"), WASM_CONFIG_MEDIA_TYPE.to_string(), None);
    let annotations = BTreeMap::from([
        ("org.opencontainers.image.title".to_string(), manifest.name.clone()),
        ("org.opencontainers.image.version".to_string(), manifest.version.clone()),
        ("org.opencontainers.image.description".to_string(), manifest.description.clone()),
    ]);
    let image = OciImageManifest::build(&layers, &config, Some(annotations));
    let auth = credentials_for_registry(reference, &http_client(reference)?).await?;
    let registry = |why: String| OciError::Registry { reference: reference.text.clone(), why };
    let client = client(reference);
    let pushed = tokio::time::timeout(OCI_PULL_TIMEOUT, async {
        client.push(&reference.reference, &layers, config, &auth, Some(image)).await
    })
    .await
    .map_err(|_| registry(format!("the push took longer than {} s", OCI_PULL_TIMEOUT.as_secs())))?;
    pushed.map_err(|e| registry(format!("the push failed: {}", error_chain(&e))))?;
    let digest = resolve(reference).await?;
    Ok(Pushed { name: manifest.name, version: manifest.version, pinned: reference.at_digest(&digest) })
}

/// The digest `reference` names now: its own, or its tag's (resolved with one bounded manifest fetch).
pub async fn resolve(reference: &OciReference) -> Result<String, OciError> {
    if let Some(digest) = reference.reference.digest() {
        return Ok(digest.to_string());
    }
    let resolved = tokio::time::timeout(OCI_PULL_TIMEOUT, async {
        let fetch = Fetch::new(reference).await?;
        fetch.manifest().await.map(|(_, digest)| digest)
    })
    .await;
    resolved.unwrap_or_else(|_| {
        let why = format!("resolving its tag took longer than {} s", OCI_PULL_TIMEOUT.as_secs());
        Err(OciError::Registry { reference: reference.text.clone(), why })
    })
}

/// A published package holds two files, side by side: the manifest and the component its `entry` names.
fn check_entry_name(manifest: &Manifest) -> Result<(), String> {
    let entry = &manifest.entry;
    if entry.contains('/') || entry.starts_with('.') || entry == MANIFEST {
        return Err(format!("its entry {entry:?} must be a file name beside {MANIFEST} to be published"));
    }
    Ok(())
}

/// A plugin package pulled into a directory.
#[derive(Debug)]
pub struct Pulled {
    /// The package directory (inside the caller's temporary directory).
    pub dir: PathBuf,
    /// Its manifest; `None` for an artifact published with none, whose directory holds the component alone
    /// (`component`), named after the repository, and the WIT it came with.
    pub manifest: Option<Manifest>,
    /// The component's file in `dir`.
    pub component: PathBuf,
    /// The reference pinned to the manifest's digest.
    pub pinned: OciReference,
}

/// Pull the plugin at `reference` into `into/package`: the tag resolved to a
/// digest once, every layer fetched by digest, bounded and checked.
pub async fn pull(reference: &OciReference, into: &Path) -> Result<Pulled, OciError> {
    let refused = |why: String| OciError::Refused { reference: reference.text.clone(), why };
    let pulled = tokio::time::timeout(OCI_PULL_TIMEOUT, async {
        let fetch = Fetch::new(reference).await?;
        let (image, digest) = fetch.manifest().await?;
        let pinned = reference.at_digest(&digest);
        if image.config.media_type != WASM_CONFIG_MEDIA_TYPE {
            return Err(refused(format!(
                "it is not a WASM plugin: its config is {:?}, not {WASM_CONFIG_MEDIA_TYPE}",
                image.config.media_type
            )));
        }
        let layers = |media_type: &str| {
            let mut found = image.layers.iter().filter(move |l| l.media_type == media_type);
            match (found.next(), found.next()) {
                (_, Some(_)) => Err(refused(format!("it has more than one {media_type} layer"))),
                (one, None) => Ok(one),
            }
        };
        let component_layer = layers(WASM_LAYER_MEDIA_TYPE)?
            .ok_or_else(|| refused(format!("it has no {WASM_LAYER_MEDIA_TYPE} layer")))?;
        let (manifest_layer, wit_layer) = (layers(PLUGIN_MANIFEST_MEDIA_TYPE)?, layers(PLUGIN_WIT_MEDIA_TYPE)?);
        let fetch = Fetch { pinned: pinned.clone(), ..fetch };
        let dir = into.join("package");
        std::fs::create_dir_all(&dir).map_err(|e| refused(format!("cannot create {}: {e}", dir.display())))?;
        let manifest = match manifest_layer {
            Some(layer) => {
                let toml = fetch.blob(&layer.digest, layer.size).await?;
                let toml = String::from_utf8(toml).map_err(|_| refused(format!("its {MANIFEST} is not UTF-8")))?;
                let manifest = crate::supply::packages::parse_manifest(&dir.join(MANIFEST), &toml)
                    .map_err(|e| refused(format!("its {MANIFEST} is not a plugin manifest: {e}")))?;
                if !manifest.kind.is_wasm() {
                    let kind = manifest.kind.as_str();
                    return Err(refused(format!("its {MANIFEST} says kind {kind}, not wasm or component")));
                }
                check_entry_name(&manifest).map_err(refused)?;
                std::fs::write(dir.join(MANIFEST), toml.as_bytes())
                    .map_err(|e| refused(format!("cannot write the package: {e}")))?;
                Some(manifest)
            }
            None => None,
        };
        let entry = match &manifest {
            Some(manifest) => manifest.entry.clone(),
            None => format!("{}.wasm", bare_component_name(reference)),
        };
        let component = fetch.blob(&component_layer.digest, component_layer.size).await?;
        let component_path = dir.join(entry);
        std::fs::write(&component_path, &component).map_err(|e| refused(format!("cannot write the package: {e}")))?;
        if let Some(layer) = wit_layer {
            let declared = u64::try_from(layer.size).unwrap_or(u64::MAX);
            crate::wasm::plain::check_wit_bytes(declared, "its WIT layer").map_err(refused)?;
            let wit = fetch.blob(&layer.digest, layer.size).await?;
            crate::wasm::plain::write_wit(&wit, &dir).map_err(|e| refused(format!("its WIT layer: {e}")))?;
        }
        Ok(Pulled { dir, manifest, component: component_path, pinned })
    })
    .await;
    pulled.unwrap_or_else(|_| Err(refused(format!("the pull took longer than {} s", OCI_PULL_TIMEOUT.as_secs()))))
}

/// The file name a component published with no manifest is pulled under: its repository's last segment, in the
/// letters a plugin name takes (`oci://ghcr.io/someone/time:1` → `time`).
fn bare_component_name(reference: &OciReference) -> String {
    let repository = reference.reference.repository();
    let last = repository.rsplit('/').next().unwrap_or(repository);
    let name: String = last.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    let name = name.trim_matches('-');
    if name.is_empty() { "component".to_string() } else { name.to_string() }
}

/// The HTTP client of one pull or push: within the registry's host a redirect
/// keeps its scheme (credentials never go over plain http); a manifest never
/// leaves it; a layer may go to a blob store elsewhere over https, where no
/// credentials go and its bytes are checked against its digest.
fn http_client(reference: &OciReference) -> Result<reqwest::Client, OciError> {
    let registry_host = reference.reference.resolve_registry().to_string();
    let scheme = reference.scheme();
    let policy = crate::supply::download::redirect_policy(OCI_REDIRECTS_MAX, move |first, next| {
        let host = match (next.host_str(), next.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => return Err("a redirect to a URL without a host".to_string()),
        };
        if host == registry_host && next.scheme() == scheme {
            Ok(())
        } else if host == registry_host {
            Err(format!("a redirect to {}:// on the registry's host is not followed", next.scheme()))
        } else if first.path().contains("/manifests/") {
            Err(format!("a manifest redirected to another host ({host}) is not followed"))
        } else if next.scheme() != "https" {
            Err(format!("a layer redirected to another host over plain http ({host}) is not followed"))
        } else {
            Ok(())
        }
    });
    reqwest::Client::builder()
        .redirect(policy)
        .read_timeout(OCI_READ_TIMEOUT)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| OciError::Registry {
            reference: reference.text.clone(),
            why: format!("the HTTP client could not be built: {e}"),
        })
}

/// The Docker config's credentials for `reference`'s registry, under the one
/// rule pull and push share: credentials go only over https or to this
/// machine. The registry's challenge is read first (bounded, under `http`'s
/// redirect policy), before `oci-client`'s handshake sends credentials to the
/// token service it names: a token service that is not https (nor on this
/// machine) stops the command before anything is sent.
async fn credentials_for_registry(reference: &OciReference, http: &reqwest::Client) -> Result<RegistryAuth, OciError> {
    let registry = |why: String| OciError::Registry { reference: reference.text.clone(), why };
    let auth = credentials(reference)?;
    if matches!(auth, RegistryAuth::Anonymous) {
        return Ok(auth);
    }
    let url = format!("{}://{}/v2/", reference.scheme(), reference.reference.resolve_registry());
    let response = http.get(&url).send().await.map_err(|e| registry(error_chain(&e)))?;
    let challenge = response.headers().get(reqwest::header::WWW_AUTHENTICATE).cloned();
    let _ = bounded_body(response, OCI_CHALLENGE_MAX_BYTES).await;
    if let Some(realm) = challenge.as_ref().and_then(|c| c.to_str().ok()).and_then(bearer_realm) {
        let safe = url::Url::parse(&realm).is_ok_and(|u| {
            u.scheme() == "https" || u.host_str().is_some_and(crate::supply::download::is_loopback_host)
        });
        if !safe {
            return Err(registry(format!(
                "the registry names the token service {realm:?}, which is not https: the Docker config's \
                 credentials are not sent there"
            )));
        }
    }
    Ok(auth)
}

/// The bounded downloads of one pull, with the credentials `oci-client`'s
/// handshake gave for the repository.
struct Fetch {
    pinned: OciReference,
    http: reqwest::Client,
    authorization: Option<String>,
}

impl Fetch {
    async fn new(reference: &OciReference) -> Result<Fetch, OciError> {
        let registry = |why: String| OciError::Registry { reference: reference.text.clone(), why };
        let http = http_client(reference)?;
        let auth = credentials_for_registry(reference, &http).await?;
        let token = client(reference)
            .auth(&reference.reference, &auth, RegistryOperation::Pull)
            .await
            .map_err(|e| registry(format!("logging in to the registry failed: {}", error_chain(&e))))?;
        let authorization = match (token, &auth) {
            (Some(token), _) => Some(format!("Bearer {token}")),
            (None, RegistryAuth::Basic(user, password)) => {
                use base64::Engine;
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                Some(format!("Basic {pair}"))
            }
            (None, RegistryAuth::Bearer(token)) => Some(format!("Bearer {token}")),
            (None, RegistryAuth::Anonymous) => None,
        };
        if let Some(value) = &authorization {
            crate::redact::register_secrets([value.clone()]);
        }
        Ok(Fetch { pinned: reference.clone(), http, authorization })
    }

    fn url(&self, kind: &str, name: &str) -> String {
        let r = &self.pinned.reference;
        format!("{}://{}/v2/{}/{kind}/{name}", self.pinned.scheme(), r.resolve_registry(), r.repository())
    }

    fn refused(&self, why: String) -> OciError {
        OciError::Refused { reference: self.pinned.text.clone(), why }
    }

    /// GET `url`, reading at most `max` bytes (`over` says why more is refused); `what` names it in errors.
    async fn get(&self, url: &str, accept: &str, max: u64, what: &str, over: &str) -> Result<Vec<u8>, OciError> {
        let mut request = self.http.get(url).header(reqwest::header::ACCEPT, accept);
        if let Some(value) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        let failed = |e: reqwest::Error| self.refused(format!("fetching {what}: {}", error_chain(&e)));
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        if !status.is_success() {
            let why = match status {
                reqwest::StatusCode::NOT_FOUND => format!("{what} is not in the registry (404)"),
                reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN => {
                    format!("the registry refused {what} ({status}): log in with `docker login` for its credentials")
                }
                _ => format!("the registry answered {status} for {what}"),
            };
            return Err(self.refused(why));
        }
        bounded_body(response, max).await.map_err(|e| match e {
            BodyError::TooLarge => self.refused(format!("{what} {over}")),
            BodyError::Read(why) => self.refused(format!("fetching {what}: {why}")),
        })
    }

    /// The image manifest and its digest (checked against the reference's digest, if it has one).
    async fn manifest(&self) -> Result<(OciImageManifest, String), OciError> {
        let r = &self.pinned.reference;
        let name = r.digest().or(r.tag()).unwrap_or("latest");
        let over = format!("is over {OCI_MANIFEST_MAX_BYTES} bytes");
        let accept = MANIFEST_MEDIA_TYPES.join(", ");
        let body =
            self.get(&self.url("manifests", name), &accept, OCI_MANIFEST_MAX_BYTES, "the manifest", &over).await?;
        let digest = sha256_digest(&body);
        if let Some(expected) = r.digest()
            && expected != digest
        {
            return Err(self.refused(format!("the manifest's bytes are {digest}, not the {expected} asked for")));
        }
        let image: OciImageManifest = serde_json::from_slice(&body)
            .map_err(|e| self.refused(format!("the manifest is not an OCI image manifest: {e}")))?;
        if image.schema_version != 2 {
            return Err(self.refused(format!("the manifest has schema version {}", image.schema_version)));
        }
        Ok((image, digest))
    }

    /// One layer, by digest: its declared size within the bound, its bytes within it and matching the digest.
    async fn blob(&self, digest: &str, declared: i64) -> Result<Vec<u8>, OciError> {
        // Checked before it becomes part of a URL: a digest of `../` would name another path on the host.
        if !is_sha256_digest(digest) {
            return Err(self.refused(format!("layer {digest:?} is not a sha256 digest")));
        }
        if declared < 0 || declared as u64 > OCI_LAYER_MAX_BYTES {
            return Err(self.refused(format!(
                "layer {digest} declares {declared} bytes, over the {OCI_LAYER_MAX_BYTES}-byte limit"
            )));
        }
        // No more than it declares (and the declaration is within the bound).
        let over = format!("is longer than the {declared} bytes its manifest declares");
        let what = format!("layer {digest}");
        let body = self.get(&self.url("blobs", digest), "*/*", declared as u64, &what, &over).await?;
        let actual = sha256_digest(&body);
        if actual != digest {
            return Err(self.refused(format!("layer {digest}'s bytes do not match its digest (they are {actual})")));
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests;
