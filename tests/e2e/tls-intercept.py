#!/usr/bin/env python3
"""tls-intercept.py ADDR PORT CERT KEY: an HTTP CONNECT proxy that
intercepts TLS, as corporate inspection proxies do.  It answers a CONNECT
with 200, then takes the client's TLS handshake itself with CERT (issued
by its own CA), and relays what it decrypts over a TLS connection of its
own to the host asked for.  Each connection in a thread; runs until
killed.  Prints "intercepted HOST:PORT" for each handshake it began."""
import socket
import ssl
import sys
import threading


def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.close()
        except OSError:
            pass


def serve(conn, ctx):
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 8192:
        d = conn.recv(4096)
        if not d:
            return
        head += d
    target = head.split(b" ")[1].decode()
    host, port = target.rsplit(":", 1)
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    print("intercepted", target, flush=True)
    try:
        inner = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError) as e:
        print("client handshake failed:", e, flush=True)
        return
    up_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    up_ctx.check_hostname = False
    up_ctx.verify_mode = ssl.CERT_NONE
    up = up_ctx.wrap_socket(socket.create_connection((host.strip("[]"), int(port))))
    threading.Thread(target=pump, args=(inner, up), daemon=True).start()
    pump(up, inner)


def main():
    addr, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(16)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve, args=(conn, ctx), daemon=True).start()


main()
