//! The tests' fake OpenAI-compatible LLM (`tests/support/fake_llm.rs`), standalone, for trying
//! real pi by hand (`docs/pi.md`, "Trying it offline"): prints its base URL, serves until
//! killed. Listens only on 127.0.0.1, on a free port.
//!
//! ```sh
//! cargo run --example fake_llm     # prints: http://127.0.0.1:PORT/v1
//! ```

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

fn main() -> std::io::Result<()> {
    let llm = fake_llm::FakeLlm::start()?;
    println!("{}", llm.base_url());
    loop {
        std::thread::park();
    }
}
