"""`slate mcp` driven by a client no one here wrote: the official MCP Python SDK.

Run by tests/mcp_server.rs (`an_official_sdk_client_...`) as
`python client.py SLATE ROOT`, where ROOT holds `work/`, `agent/`, `run/`, `home/` and
`scripts.json` (simulated workers). Prints one `ok: ...` line per step and exits 0, or raises.

Steps: initialize, logging/setLevel, tools/list, a foreground call with progress, a call the
client cancels (the child ends cancelled and the server goes on serving).
"""

import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def server(slate: str, root: str) -> StdioServerParameters:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.path.join(root, "home"),
        "XDG_RUNTIME_DIR": os.path.join(root, "run"),
        "PI_CODING_AGENT_DIR": os.path.join(root, "agent"),
    }
    args = ["mcp", "--backend", "sim", "--model", "fake/model",
            "--scenario", os.path.join(root, "scripts.json"), "--progress-ms", "100"]
    return StdioServerParameters(command=slate, args=args, env=env, cwd=os.path.join(root, "work"))


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def child_status(session: ClientSession) -> list:
    result = await session.call_tool("delegate_coordinate", {"action": "status", "summary": True})
    assert not result.is_error, text(result)
    return result


async def main(slate: str, root: str) -> None:
    logs = []

    async def on_log(params) -> None:
        logs.append(params)

    async with stdio_client(server(slate, root)) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            init = await session.initialize()
            assert init.server_info.name == "slate", init
            print(f"ok: initialize ({init.protocol_version}, {init.server_info.name} {init.server_info.version})")

            await session.set_logging_level("info")
            print("ok: logging/setLevel")

            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert {"delegate_task", "delegate_coordinate", "subagent"} <= set(names), names
            print(f"ok: tools/list {names}")

            progress = []

            async def on_progress(value, total, message) -> None:
                progress.append((value, message))

            result = await session.call_tool(
                "delegate_task",
                {"assignment": "Slow one", "profile": "scout"},
                progress_callback=on_progress,
            )
            assert not result.is_error, text(result)
            assert "slow answer" in text(result), text(result)
            assert progress, "no progress notification while the call waited"
            values = [v for v, _ in progress]
            assert values == sorted(values), values
            print(f"ok: tools/call with {len(progress)} progress notifications")

            async with anyio.create_task_group() as tg:
                started = anyio.Event()

                async def on_progress_2(value, total, message) -> None:
                    started.set()

                async def long_call() -> None:
                    await session.call_tool(
                        "delegate_task",
                        {"assignment": "Think for a minute", "profile": "scout"},
                        progress_callback=on_progress_2,
                    )

                tg.start_soon(long_call)
                with anyio.fail_after(30):
                    await started.wait()
                tg.cancel_scope.cancel()
            print("ok: the client cancelled a waiting call")

            with anyio.fail_after(30):
                while True:
                    status = text(await child_status(session))
                    if "cancelled" in status:
                        break
                    await anyio.sleep(0.1)
            print("ok: the cancelled call's child ended cancelled; the server still answers")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
