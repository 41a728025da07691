//! The GLM Coding Plan pack. When the session model is GLM 5.3 on the Coding
//! Plan endpoint (`api.z.ai`, or `open.bigmodel.cn` for mainland accounts) and
//! its API key is set at mount, four provider servers join the project's server
//! set, in memory only:
//!
//! | name | transport | endpoint |
//! |---|---|---|
//! | `glm-search` | Streamable HTTP | `{base}/api/mcp/web_search_prime/mcp` |
//! | `glm-reader` | Streamable HTTP | `{base}/api/mcp/web_reader/mcp` |
//! | `glm-zread` | Streamable HTTP | `{base}/api/mcp/zread/mcp` |
//! | `glm-vision` | stdio | `npx -y @z_ai/mcp-server@latest` |
//!
//! `{base}` is `https://api.z.ai` (or `https://open.bigmodel.cn`), or
//! `CLAT_GLM_MCP_BASE_URL` when set (a proxy; the tests' local server). The key
//! goes to the HTTP servers as `Authorization: Bearer` and to the vision server
//! as `Z_AI_API_KEY` (with `Z_AI_MODE` `ZAI` or `ZHIPU`); it is never written
//! anywhere. A same-named `mcp.json` entry wins over a pack server.

use std::collections::BTreeMap;

use clat_mcp::config::{EntryTransport, ServerEntry};

use crate::services::model::ActiveModel;

/// The model the pack belongs to (a name starting with it, any case).
pub const GLM_CODING_PLAN_MODEL: &str = "glm-5.3";
/// The international and the mainland API hosts.
pub const GLM_INTERNATIONAL_HOST: &str = "api.z.ai";
pub const GLM_MAINLAND_HOST: &str = "open.bigmodel.cn";
/// Where the pack's HTTP servers are, instead of the provider's host.
pub const ENV_GLM_MCP_BASE_URL: &str = "CLAT_GLM_MCP_BASE_URL";
/// The pack's server names.
pub const GLM_PACK_SERVERS: [&str; 4] = ["glm-search", "glm-reader", "glm-zread", "glm-vision"];

/// An active GLM Coding Plan: where its servers are and the key they take.
#[derive(Clone)]
pub struct CodingPlan {
    api_key: String,
    mainland: bool,
    mcp_base: String,
}

impl std::fmt::Debug for CodingPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodingPlan")
            .field("mainland", &self.mainland)
            .field("mcp_base", &self.mcp_base)
            .finish_non_exhaustive()
    }
}

/// The Coding Plan, if the session model is GLM 5.3 on a Coding Plan endpoint with a key.
pub fn coding_plan(model: Option<&ActiveModel>, env: impl Fn(&str) -> Option<String>) -> Option<CodingPlan> {
    let model = model?;
    let api_key = model.api_key.clone()?;
    if !model.model.to_ascii_lowercase().starts_with(GLM_CODING_PLAN_MODEL) {
        return None;
    }
    let url = reqwest::Url::parse(&model.base_url).ok()?;
    let host = url.host_str()?;
    let mainland = match host {
        GLM_INTERNATIONAL_HOST => false,
        GLM_MAINLAND_HOST => true,
        _ => return None,
    };
    if !url.path().contains("/coding/") {
        return None;
    }
    let mcp_base = env(ENV_GLM_MCP_BASE_URL)
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| format!("https://{host}"))
        .trim_end_matches('/')
        .to_string();
    Some(CodingPlan { api_key, mainland, mcp_base })
}

/// The pack's servers, as `mcp.json` entries (never written to a file).
pub fn pack_servers(plan: &CodingPlan) -> Vec<(String, ServerEntry)> {
    let http = |path: &str| {
        ServerEntry::new(EntryTransport::Http {
            url: format!("{}/api/mcp/{path}/mcp", plan.mcp_base),
            headers: BTreeMap::from([("Authorization".to_string(), format!("Bearer {}", plan.api_key))]),
            oauth: None,
        })
    };
    let vision = ServerEntry::new(EntryTransport::Stdio {
        command: "npx".into(),
        args: vec!["-y".into(), "@z_ai/mcp-server@latest".into()],
        env: BTreeMap::from([
            ("Z_AI_API_KEY".to_string(), plan.api_key.clone()),
            ("Z_AI_MODE".to_string(), if plan.mainland { "ZHIPU" } else { "ZAI" }.to_string()),
        ]),
        cwd: None,
        env_inherit: true,
    });
    vec![
        ("glm-search".into(), http("web_search_prime")),
        ("glm-reader".into(), http("web_reader")),
        ("glm-zread".into(), http("zread")),
        ("glm-vision".into(), vision),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(base_url: &str, name: &str, key: Option<&str>) -> ActiveModel {
        ActiveModel { base_url: base_url.into(), model: name.into(), api_key: key.map(str::to_string) }
    }

    #[test]
    fn only_glm_5_3_on_a_coding_plan_endpoint_with_a_key_is_a_plan() {
        let no_env = |_: &str| None;
        let plan = |m: &ActiveModel| coding_plan(Some(m), no_env);
        assert!(plan(&model("https://api.z.ai/api/coding/paas/v4", "glm-5.3", Some("k"))).is_some());
        assert!(plan(&model("https://open.bigmodel.cn/api/coding/paas/v4", "GLM-5.3-Air", Some("k"))).is_some());
        assert!(plan(&model("https://api.z.ai/api/coding/paas/v4", "glm-5.3", None)).is_none(), "no key");
        assert!(plan(&model("https://api.z.ai/api/paas/v4", "glm-5.3", Some("k"))).is_none(), "not the Coding Plan");
        assert!(plan(&model("https://api.z.ai/api/coding/paas/v4", "glm-4.6", Some("k"))).is_none(), "another model");
        assert!(plan(&model("https://example.com/api/coding/v1", "glm-5.3", Some("k"))).is_none(), "another host");
        assert!(coding_plan(None, no_env).is_none());
    }

    #[test]
    fn the_pack_has_four_servers_with_the_key_in_memory() {
        let plan =
            coding_plan(Some(&model("https://open.bigmodel.cn/api/coding/paas/v4", "glm-5.3", Some("k1"))), |_| None)
                .unwrap();
        let servers = pack_servers(&plan);
        let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, GLM_PACK_SERVERS);
        let EntryTransport::Http { url, headers, .. } = &servers[2].1.transport else { panic!() };
        assert_eq!(url, "https://open.bigmodel.cn/api/mcp/zread/mcp");
        assert_eq!(headers["Authorization"], "Bearer k1");
        let EntryTransport::Stdio { command, args, env, .. } = &servers[3].1.transport else { panic!() };
        assert_eq!((command.as_str(), args.join(" ")), ("npx", "-y @z_ai/mcp-server@latest".to_string()));
        assert_eq!((env["Z_AI_API_KEY"].as_str(), env["Z_AI_MODE"].as_str()), ("k1", "ZHIPU"));
        assert!(!format!("{plan:?}").contains("k1"), "the key never shows in Debug");
    }
}
