"""A fake of the two AWS JSON-protocol APIs Kestrel uses, DynamoDB (DynamoDB_20120810) and Secrets Manager
(secretsmanager), on one port: POST / with X-Amz-Target, application/x-amz-json-1.0 or 1.1. SigV4 headers
are accepted unchecked.

  DynamoDB_20120810.GetItem / PutItem (ConditionExpression "attribute_not_exists(pk)" or
  "#v = :v" with the version attribute) / DescribeTable
  secretsmanager.GetSecretValue (any SecretId: a value derived from the name, stable for the run)

Every request is recorded (GET /__fake/requests; $FAKE_RECORD_DIR/aws-<pid>.jsonl when set).
"""
import hashlib, json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
TABLES = {}
SEED = os.urandom(8).hex()
RECORD = []
SINK = os.path.join(os.environ["FAKE_RECORD_DIR"], "aws-%d.jsonl" % os.getpid()) if os.environ.get("FAKE_RECORD_DIR") else None


def keep(entry):
    with LOCK:
        RECORD.append(entry)
        if SINK:
            with open(SINK, "a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


def err(kind, msg):
    return 400, {"__type": "com.amazonaws.dynamodb.v20120810#" + kind, "message": msg}


class Aws(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, doc, ctype):
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("x-amzn-RequestId", os.urandom(8).hex())
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/__fake/requests":
            with LOCK:
                return self.answer(200, RECORD, "application/json")
        self.answer(200, {"healthy": True}, "application/json")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/__astrabox/reset":
            with LOCK:
                TABLES.clear()
            keep({"event": "reset", "t": time.time()})
            return self.answer(200, {}, "application/json")
        target = self.headers.get("X-Amz-Target", "")
        body = json.loads(raw or b"{}")
        ctype = self.headers.get("Content-Type", "application/x-amz-json-1.0")
        service, _, op = target.partition(".")
        code, doc = self.dispatch(service, op, body)
        keep({"t": time.time(), "host": self.headers.get("Host", ""), "target": target, "status": code, "body": body})
        self.answer(code, doc, ctype)

    def dispatch(self, service, op, body):
        if service == "secretsmanager" and op == "GetSecretValue":
            name = body["SecretId"]
            value = "kst_" + hashlib.sha256((SEED + name).encode()).hexdigest()[:32]
            return 200, {"ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:" + name, "Name": name,
                         "SecretString": json.dumps({"api_key": value}), "VersionId": "v1"}
        if service != "DynamoDB_20120810":
            return 400, {"__type": "UnknownOperationException", "message": target_text(service, op)}
        table = TABLES.setdefault(body.get("TableName", ""), {})
        if op == "DescribeTable":
            return 200, {"Table": {"TableName": body["TableName"], "TableStatus": "ACTIVE"}}
        key = json.dumps(body.get("Key") or {k: v for k, v in (body.get("Item") or {}).items() if k == "pk"}, sort_keys=True)
        with LOCK:
            if op == "GetItem":
                item = table.get(key)
                return 200, ({"Item": item} if item else {})
            if op == "PutItem":
                cond = body.get("ConditionExpression")
                cur = table.get(key)
                if cond == "attribute_not_exists(pk)" and cur is not None:
                    return err("ConditionalCheckFailedException", "The conditional request failed")
                if cond and cond.startswith("#v = :v"):
                    want = (body.get("ExpressionAttributeValues") or {}).get(":v")
                    if cur is None or cur.get("version") != want:
                        return err("ConditionalCheckFailedException", "The conditional request failed")
                table[key] = body["Item"]
                return 200, {}
        return 400, {"__type": "UnknownOperationException", "message": op}


def target_text(service, op):
    return "unknown operation %s.%s" % (service, op)


port = int(sys.argv[sys.argv.index("--port") + 1])
srv = ThreadingHTTPServer(("127.0.0.1", port), Aws)
srv.daemon_threads = True
print("kestrel aws fake on %d" % port, flush=True)
srv.serve_forever()
