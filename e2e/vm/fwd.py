#!/usr/bin/python3
"""QEMU's user-mode network runs this for every connection the guest opens to a guestfwd address
(`guestfwd=tcp:10.0.2.100:6443-cmd:fwd.py PORT`): the connection is its stdin and stdout, which
it joins to 127.0.0.1:PORT, the test's apiserver. Standard library only."""
import os
import selectors
import socket
import sys

port = int(sys.argv[1])
up = socket.create_connection(("127.0.0.1", port))
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ, "guest")
sel.register(up, selectors.EVENT_READ, "server")
while True:
    for key, _ in sel.select():
        if key.data == "guest":
            data = os.read(0, 65536)
            if data:
                up.sendall(data)
            else:
                # The guest closed its side: tell the server, keep its answer flowing.
                sel.unregister(0)
                up.shutdown(socket.SHUT_WR)
        else:
            data = up.recv(65536)
            if not data:
                # The server closed: so does the guest's connection (this process ends).
                sys.exit(0)
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]
