//! A plain component that reaches the network: wasi:http through wstd, as any
//! component author would. It imports `wasi:http`, which CLAT links only for
//! a plugin whose manifest declares `[capabilities] http`, and every request
//! goes through the user's grant.

wit_bindgen::generate!({ path: "wit", world: "web-fetch", generate_all });

struct WebFetch;

impl Guest for WebFetch {
    fn get(url: String) -> Result<Page, String> {
        let request = wstd::http::Request::get(url.as_str())
            .body(wstd::http::Body::empty())
            .map_err(|e| format!("not a valid request: {e}"))?;
        wstd::runtime::block_on(async move {
            let response = wstd::http::Client::new().send(request).await.map_err(|e| format!("{e:#}"))?;
            let status = response.status().as_u16();
            let content_type =
                response.headers().get("content-type").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let mut body = response.into_body();
            let bytes = body.contents().await.map_err(|e| format!("{e:#}"))?;
            Ok(Page { status, content_type, body: String::from_utf8_lossy(bytes).into_owned() })
        })
    }

    fn length(text: String) -> u32 {
        text.chars().count() as u32
    }
}

export!(WebFetch);
