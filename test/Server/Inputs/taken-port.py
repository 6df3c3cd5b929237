"""Holds a loopback port and starts hesper-server on it (the model, then
any further arguments for the server); exits with the server's status (its
error goes to stderr)."""
import socket
import subprocess
import sys

holder = socket.socket()
holder.bind(("127.0.0.1", 0))
holder.listen()
port = holder.getsockname()[1]
result = subprocess.run(["hesper-server", "-m", sys.argv[1], "--port",
                         str(port), "--backend=cpu", "-np", "1",
                         *sys.argv[2:]],
                        timeout=120)
sys.exit(result.returncode)
