"""A private set intersection between two parties in one process, two threads over loopback."""

import socket
import threading

import pytest

import batchcrypt


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_parties_find_the_common_items(tmp_path):
    alice = [f"id-{i}" for i in range(0, 300, 2)]
    bob = [f"id-{i}" for i in range(0, 300, 3)] + ["only-bob"]
    (tmp_path / "alice.txt").write_text("\n".join(alice) + "\n")
    (tmp_path / "bob.txt").write_text("\n".join(bob) + "\n")
    addr = f"127.0.0.1:{free_port()}"
    result = {}

    def party(name, **where):
        e = batchcrypt.Engine("cpu")
        result[name] = e.psi(tmp_path / f"{name}.txt", output=tmp_path / f"{name}.common", chunk=64, timeout=60, **where)

    t = threading.Thread(target=party, args=("alice",), kwargs={"listen": addr})
    t.start()
    party("bob", connect=addr)
    t.join(60)
    common = {x for x in alice if x in set(bob)}
    assert [alice[i] for i in result["alice"]] == [x for x in alice if x in common]
    assert [bob[i] for i in result["bob"]] == [x for x in bob if x in common]
    assert (tmp_path / "alice.common").read_text().split() == [x for x in alice if x in common]


def test_bad_arguments_and_no_peer(tmp_path):
    (tmp_path / "s.txt").write_text("a\nb\n")
    e = batchcrypt.Engine("cpu")
    with pytest.raises(ValueError, match="exactly one"):
        e.psi(tmp_path / "s.txt")
    (tmp_path / "dup.txt").write_text("a\na\n")
    with pytest.raises(ValueError, match="uplicate"):
        e.psi(tmp_path / "dup.txt", connect="127.0.0.1:1", timeout=1)
    with pytest.raises(ValueError, match="no peer"):
        e.psi(tmp_path / "s.txt", listen=f"127.0.0.1:{free_port()}", timeout=0.5)
    with pytest.raises(ValueError, match="cannot connect"):
        e.psi(tmp_path / "s.txt", connect=f"127.0.0.1:{free_port()}", timeout=0.5)
