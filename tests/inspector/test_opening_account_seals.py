"""An account read's `metadata_seal` opened in flight, over real HTTP through the inspector in front
of a sandbox, as an address read's is.

001, `decoy_create`'s `metadata_seals`: "One entry: the same record sealed to THIS connection's own
public key …, stored with the address in one step and returned to this connection as
`metadata_seal` on `GET /api/agent/decoys`, `GET /api/agent/decoys/{decoyId}` and the account
reads." So the account reads (`GET /api/agent/accounts`, `GET /api/agent/accounts/{accountId}`)
carry a blob sealed to the agent: the inspector opens it with the agent's key, and without it says
why not — parsed by layout, or flagged when the owner's key opens what should be the agent's own copy.
"""

from __future__ import annotations

import httpx
import pytest

from decoy_lab import AgentKey
from decoy_lab.inspector import Inspector, flow_record
from decoy_lab.recipes import sealing
from decoy_lab.sandbox import Sandbox
from decoy_lab.sandbox.testing import pair_agent
from decoy_lab.widgets.flowdetail import detail_of
from decoy_lab.wire import layouts as wire

pytestmark = pytest.mark.timeout(120)
ACCOUNTS, DECOYS = "/api/agent/accounts", "/api/agent/decoys"
MAKER = [{"permissions": ["account.create"]}]
DETAILS = {"serviceName": "Shop", "serviceURL": "https://shop.example", "agentCreated": True}


class Agent:
    """One paired agent talking through the inspector; `send` returns the answer and its flow."""

    def __init__(self, insp: Inspector, key: AgentKey, client: httpx.Client):
        self.insp, self.key, self.client = insp, key, client
        self.token = pair_agent(insp.url, key, MAKER, "Seal reader")

    def send(self, method: str, path: str, **kw):
        headers = {"Authorization": f"Bearer {self.token['access_token']}"}
        r = self.client.request(method, f"{self.insp.url}{path}", headers=headers, **kw)
        self.insp.settle()
        return r, self.insp.flow(len(self.insp))

    def create_address(self, *, seal_to: str | None = None) -> tuple[str, str]:
        """An address with its account, its details sealed to the owner and this connection's own
        copy sealed to `seal_to` (its own key unless told). Returns (account id, decoy id)."""
        owner_pk = self.send("GET", f"{ACCOUNTS}/public-key")[0].json()["public_key"]
        seal = sealing.seal_envelope(sealing.json_bytes(DETAILS), seal_to or self.key.public_key_b64, owner=False)
        record = sealing.seal_envelope(sealing.json_bytes({"name": "Shop"}), owner_pk, owner=True)
        body = {
            "sealed_details": wire.b64encode(sealing.seal_envelope(sealing.json_bytes(DETAILS), owner_pk, owner=False)),
            "metadata_seals": [{"token_id": self.token["token_id"], "sealed_envelope": wire.b64encode(seal)}],
            "account_encrypted_data": wire.b64encode(record),
        }
        r, _ = self.send("POST", DECOYS, json=body)
        assert r.status_code == 201, r.text
        return r.json()["account_id"], r.json()["id"]


def _seal_rows(flow: flow_record.Flow) -> list[flow_record.Row]:
    return [r for r in flow.rows if r.kind == "metadata seal"]


def test_the_account_reads_open_the_addresss_seal_with_the_agents_key(owner, agent_key, client):
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb, agent_key=agent_key) as insp:
        agent = Agent(insp, agent_key, client)
        account_id, decoy_id = agent.create_address()

        r, listed = agent.send("GET", ACCOUNTS)
        assert r.status_code == 200, r.text
        (i,) = [n for n, a in enumerate(r.json()["accounts"]) if a["id"] == account_id]
        assert r.json()["accounts"][i]["metadata_seal"], "the sandbox serves the copy on the account list"
        (seal,) = _seal_rows(listed)
        assert (seal.id, seal.field, seal.verdict, seal.opened_by) == (
            decoy_id,
            f"response.accounts[{i}].metadata_seal",
            flow_record.READABLE,
            "agent key",
        )
        assert seal.text == "Shop (https://shop.example)" and seal.plaintext == DETAILS
        assert listed.verdict == flow_record.READABLE  # the record (owner key) and the seal (agent key)

        r, read = agent.send("GET", f"{ACCOUNTS}/{account_id}")
        assert r.status_code == 200, r.text
        assert [(x.kind, x.id, x.field, x.verdict) for x in read.rows] == [
            ("account", account_id, "response.encrypted_data", flow_record.READABLE),
            ("metadata seal", decoy_id, "response.metadata_seal", flow_record.READABLE),
        ]
        shown = [row for row in detail_of(read)["rows"] if row["kind"] == "metadata seal"]
        assert [row["verdict"] for row in shown] == [flow_record.READABLE]
        doc = insp.to_har()

    # a recording reopened offline with the agent's key opens it the same way; with the owner's only,
    # it is parsed by layout (the owner's key does not open the agent's own copy, as it should not)
    again = Inspector.open(doc, agent_key=agent_key)
    (seal,) = _seal_rows(again.flow(read.id))
    assert (seal.verdict, seal.opened_by) == (flow_record.READABLE, "agent key")
    owners = Inspector.open(doc, owner_key=owner)
    (seal,) = _seal_rows(owners.flow(read.id))
    assert seal.verdict == flow_record.LAYOUT and seal.reason.startswith("no key opens it"), seal.reason


def test_without_the_agents_key_a_copy_sealed_to_the_owner_is_flagged(owner, agent_key, client):
    """The copy is "sealed to THIS connection's own public key": one the owner's key opens is a
    fault the inspector sees without the agent's key; one it does not is parsed by layout."""
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb) as insp:
        agent = Agent(insp, agent_key, client)
        owner_pk = agent.send("GET", f"{ACCOUNTS}/public-key")[0].json()["public_key"]
        wrong_account, wrong_decoy = agent.create_address(seal_to=owner_pk)
        right_account, right_decoy = agent.create_address()

        _, wrong = agent.send("GET", f"{ACCOUNTS}/{wrong_account}")
        (seal,) = _seal_rows(wrong)
        assert (seal.id, seal.verdict, seal.opened_by) == (wrong_decoy, flow_record.UNREADABLE, "owner key")
        assert "sealed to its own public key" in seal.reason and wrong.verdict == "1 unreadable"

        _, right = agent.send("GET", f"{ACCOUNTS}/{right_account}")
        (seal,) = _seal_rows(right)
        assert (seal.id, seal.verdict) == (right_decoy, flow_record.LAYOUT)
        assert "RSA-2048" in seal.certainty, seal.certainty


def test_an_account_read_without_a_copy_shows_no_seal_row(owner, agent_key, client):
    """An account with no address (a plain create) is served no `metadata_seal`: nothing to open."""
    with Sandbox.start(owner_key=owner, seed="none") as sb, Inspector.start(sandbox=sb, agent_key=agent_key) as insp:
        agent = Agent(insp, agent_key, client)
        owner_pk = agent.send("GET", f"{ACCOUNTS}/public-key")[0].json()["public_key"]
        record = sealing.seal_envelope(sealing.json_bytes({"name": "Plain"}), owner_pk, owner=True)
        r, _ = agent.send("POST", ACCOUNTS, json={"encrypted_data": wire.b64encode(record)})
        assert r.status_code == 201, r.text
        r, read = agent.send("GET", f"{ACCOUNTS}/{r.json()['id']}")
        assert r.status_code == 200 and not r.json().get("metadata_seal"), r.text
        assert [(x.kind, x.verdict, x.text) for x in read.rows] == [("account", flow_record.READABLE, "Plain")]
