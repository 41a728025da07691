//! `test-guests`: one plugin whose tools each misbehave in one way, for the
//! host's tests. None of this is an example to follow.

use clat_guest::{
    Args, ChoiceField, ChoiceOption, ElicitationForm, FieldKind, FormField, HostTool, LogLevel, RawPlugin, Role,
    SamplingMessage, SamplingRequest, ToolOutput, ToolSpec, host, output_text, text, tool,
};
use serde_json::json;

struct TestGuests;

/// The length of the secret `plant_secret` writes and `scan_secret` looks for.
const SECRET_LEN: usize = 64;

/// `plant_secret {"secret": 64 bytes, "heap_mib": N}`: copies of the secret in
/// static memory and across a heap grown to N MiB, each 8-byte aligned.
fn plant_secret(args: &Args) -> Result<ToolOutput, String> {
    let secret = args.required_str("secret")?.as_bytes().to_vec();
    if secret.len() != SECRET_LEN {
        return Err(format!("the secret must be {SECRET_LEN} bytes"));
    }
    let mut planted = PLANTED.lock().unwrap_or_else(|p| p.into_inner());
    for chunk in planted.0.chunks_mut(SECRET_LEN) {
        chunk.copy_from_slice(&secret);
    }
    let bytes = args.i64("heap_mib").unwrap_or(4) as usize * 1024 * 1024;
    let mut heap: Vec<u64> = Vec::with_capacity(bytes / 8);
    let words: Vec<u64> = secret.chunks(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect();
    while heap.len() + words.len() <= bytes / 8 {
        heap.extend_from_slice(&words);
    }
    std::hint::black_box(&heap);
    // The heap is left as it is: its pages hold the secret after the call.
    std::mem::forget(heap);
    Ok(text(format!("planted {} copies", bytes / 8 / words.len() + planted.0.len() / SECRET_LEN)))
}

/// Static memory the planted secret also goes to (8-byte aligned).
#[repr(align(8))]
struct Planted([u8; 4096]);
static PLANTED: std::sync::Mutex<Planted> = std::sync::Mutex::new(Planted([0; 4096]));

fn open(name: &str) -> ToolSpec {
    tool(name, "test tool").read_only().closed_world().build()
}

impl RawPlugin for TestGuests {
    fn tools() -> Vec<ToolSpec> {
        [
            "echo",
            "spin",
            "memory_bomb",
            "trap",
            "big_output",
            "host_call",
            "sample",
            "sampling_flood",
            "elicit",
            "nested_form",
            "context",
            "log_spam",
            "stdout_spam",
            "probe",
            "plant_secret",
            "scan_secret",
        ]
        .into_iter()
        .map(open)
        .collect()
    }

    fn call(name: &str, args: Args) -> Result<ToolOutput, String> {
        match name {
            "echo" => Ok(text(args.0.to_string())),
            "spin" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "memory_bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 * 1024 * 1024]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => panic!("the test guest traps on purpose"),
            "big_output" => Ok(text("x".repeat(args.i64("bytes").unwrap_or(2 * 1024 * 1024) as usize))),
            "host_call" => {
                // {"tool": "read_file", "arguments": {...}}
                let tool = match args.required_str("tool")? {
                    "list_files" => HostTool::ListFiles,
                    "read_file" => HostTool::ReadFile,
                    "search" => HostTool::Search,
                    "write_file" => HostTool::WriteFile,
                    "edit_file" => HostTool::EditFile,
                    "run_command" => HostTool::RunCommand,
                    other => return Err(format!("unknown host tool {other}")),
                };
                let arguments = args.0.get("arguments").cloned().unwrap_or(json!({}));
                Ok(match host::call(tool, &arguments) {
                    Ok(out) => ToolOutput { is_error: out.is_error, ..text(format!("ok: {}", output_text(&out))) },
                    Err(e) => clat_guest::error(format!("host error: {}", host::describe(&e))),
                })
            }
            "sample" => {
                let messages = args.i64("messages").unwrap_or(1) as usize;
                let chars = args.i64("chars").unwrap_or(10) as usize;
                let request = SamplingRequest {
                    messages: (0..messages)
                        .map(|_| SamplingMessage { role: Role::User, text: "y".repeat(chars / messages.max(1)) })
                        .collect(),
                    system_prompt: None,
                    max_tokens: args.i64("max_tokens").unwrap_or(100) as u32,
                    temperature: None,
                    stop_sequences: vec![],
                    model_hints: vec!["gpt-something-else".into()],
                };
                Ok(match host::sample(&request) {
                    Ok(r) => text(format!("model={} text={}", r.model, r.text)),
                    Err(e) => clat_guest::error(format!("host error: {}", host::describe(&e))),
                })
            }
            "sampling_flood" => {
                let request = SamplingRequest {
                    messages: vec![SamplingMessage { role: Role::User, text: "again".into() }],
                    system_prompt: None,
                    max_tokens: 10,
                    temperature: None,
                    stop_sequences: vec![],
                    model_hints: vec![],
                };
                let mut done = 0;
                loop {
                    match host::sample(&request) {
                        Ok(_) => done += 1,
                        Err(e) => return Ok(text(format!("completed {done}, then: {}", host::describe(&e)))),
                    }
                    if done > 1000 {
                        return Ok(text("the budget never stopped the flood"));
                    }
                }
            }
            "elicit" => {
                let form = ElicitationForm {
                    message: "Pick one".into(),
                    fields: vec![FormField {
                        name: "colour".into(),
                        title: None,
                        description: None,
                        required: true,
                        kind: FieldKind::Choice(ChoiceField {
                            options: (0..args.i64("choices").unwrap_or(2))
                                .map(|i| ChoiceOption { value: format!("c{i}"), title: None })
                                .collect(),
                            default: None,
                        }),
                    }],
                };
                Ok(match host::elicit(&form) {
                    Ok(r) => text(format!("{r:?}")),
                    Err(e) => clat_guest::error(format!("host error: {}", host::describe(&e))),
                })
            }
            "nested_form" => {
                let fields = (0..args.i64("fields").unwrap_or(17))
                    .map(|i| FormField {
                        name: format!("f{i}"),
                        title: None,
                        description: None,
                        required: false,
                        kind: FieldKind::Boolean(clat_guest::BooleanField { default: None }),
                    })
                    .collect();
                Ok(match host::elicit(&ElicitationForm { message: "too many".into(), fields }) {
                    Ok(r) => text(format!("{r:?}")),
                    Err(e) => clat_guest::error(format!("host error: {}", host::describe(&e))),
                })
            }
            "context" => {
                let ctx = host::context();
                Ok(text(format!(
                    "project={} run={}",
                    ctx.project_name,
                    ctx.run.map(|r| r.run_id).unwrap_or_else(|| "none".into())
                )))
            }
            "log_spam" => {
                for i in 0..args.i64("lines").unwrap_or(100) {
                    host::log(LogLevel::Info, &format!("line {i} token=sk-abcdefghijklmnopqrstuvwx"));
                }
                Ok(text("logged"))
            }
            "stdout_spam" => {
                for i in 0..10_000 {
                    println!("stdout line {i} Bearer abcdefghijklmnop");
                }
                eprintln!("to stderr: api_key=supersecretvalue");
                Ok(text("printed"))
            }
            "probe" => {
                // What ambient authority does this guest have? (It should have none.)
                let env_vars = std::env::vars().count();
                let own_manifest = std::fs::read_to_string("/plugin/clat-plugin.toml").is_ok()
                    || std::fs::read_dir("/plugin").map(|d| d.count() > 0).unwrap_or(false);
                let write_own = std::fs::write("/plugin/planted.txt", "x").is_ok();
                let read_etc = std::fs::read_to_string("/etc/hostname").is_ok();
                let read_cwd = std::fs::read_dir(".").is_ok();
                let tcp = std::net::TcpStream::connect(("127.0.0.1", args.i64("port").unwrap_or(9) as u16)).is_ok();
                Ok(text(
                    json!({
                        "env_vars": env_vars,
                        "reads_own_dir": own_manifest,
                        "writes_own_dir": write_own,
                        "reads_etc": read_etc,
                        "reads_cwd": read_cwd,
                        "tcp_connect": tcp,
                    })
                    .to_string(),
                ))
            }
            "plant_secret" => plant_secret(&args),
            "scan_secret" => {
                // {"masked": [byte + 1, …], "heap_mib": N}: the secret, each byte
                // plus one, so it never stands whole in this instance's memory.
                // Grows linear memory past N MiB without writing to it, then
                // counts the aligned copies of the secret in all of it. With
                // "secret" too, it plants it first (the scan's own check).
                if args.0.get("secret").is_some() {
                    plant_secret(&args)?;
                }
                let masked: Vec<u8> = args.0["masked"]
                    .as_array()
                    .ok_or("masked: an array of bytes")?
                    .iter()
                    .map(|b| b.as_u64().unwrap_or(0) as u8)
                    .collect();
                if masked.len() != SECRET_LEN {
                    return Err(format!("the secret must be {SECRET_LEN} bytes"));
                }
                let word = |i: usize| u64::from_le_bytes(std::array::from_fn(|j| masked[i * 8 + j].wrapping_sub(1)));
                const PAGE: usize = 65536;
                let wanted = (args.i64("heap_mib").unwrap_or(4) as usize * 1024 * 1024) / PAGE + 64;
                let pages = core::arch::wasm32::memory_size(0);
                if pages < wanted {
                    core::arch::wasm32::memory_grow(0, wanted - pages);
                }
                let size = core::arch::wasm32::memory_size(0) * PAGE;
                let first = word(0);
                let mut found = 0u32;
                // From 8: address 0 is never read.
                let mut at = 8;
                while at + SECRET_LEN <= size {
                    // SAFETY: every address below `size` is this instance's linear memory.
                    let read = |addr: usize| unsafe { core::ptr::read_volatile(addr as *const u64) };
                    if read(at) == first && (1..SECRET_LEN / 8).all(|i| read(at + i * 8) == word(i)) {
                        found += 1;
                    }
                    at += 8;
                }
                Ok(text(json!({ "found": found, "scanned_bytes": size }).to_string()))
            }
            other => Err(format!("no tool {other:?}")),
        }
    }

    fn context_changed(snapshot: Option<clat_guest::ContextSnapshot>) {
        match snapshot.and_then(|s| s.run) {
            Some(run) => println!("context-changed: run {}", run.run_id),
            None => println!("context-changed: no run"),
        }
    }
}

clat_guest::export_raw_plugin!(TestGuests);
