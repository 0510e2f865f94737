"""The embedded model served over loopback HTTP, so the engine reaches it as it reaches any model: `--base-url`.

The same app `selfrag ask` serves in-process (llama-cpp-python's, behind the engine's batching gate), bound to a
port on 127.0.0.1 with uvicorn. What runs at `--base-url` takes the remote path: it probes (or remembers) the
server's capabilities, and its scorer, abstention cut and confidence come from weights fitted for this endpoint and
model by `selfrag calibrate`, never from the weights shipped for the in-process embedded model.

    python benchmarks/serve_embedded.py --port 8077 --threads 1
    selfrag calibrate --index IDX --base-url http://127.0.0.1:8077/v1
"""

from __future__ import annotations

import argparse
import os

from selfrag.llm.local import N_CTX, ServeSettings, load_runtime, local_model_path, serve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8077)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: as `selfrag ask`)")
    args = parser.parse_args()
    import uvicorn  # installed with the `local` extra (llama-cpp-python's server)

    settings = ServeSettings(local_model_path(), N_CTX, args.threads)
    served = serve(settings, os.environ, load_runtime())
    print(f"serving {served.describe()} at http://127.0.0.1:{args.port}/v1", flush=True)
    uvicorn.run(served.app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
