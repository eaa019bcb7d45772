"""A local stand-in for the Hugging Face hub's file API, serving one folder as one model repository, so
``huggingface_hub`` itself (``HF_ENDPOINT=http://127.0.0.1:PORT``) downloads and verifies it without the network.

It answers what ``snapshot_download``, ``hf_hub_download`` and ``verify_repo_checksums`` ask: the revision's file list,
the repository tree with each file's git and LFS hashes, and the files (HEAD and GET).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_FROM = 10_000_000
"""Files this big are LFS files, as model.bin is on the hub."""


def hub_stand_in(repo_id: str, folder: Path) -> Starlette:
    def files() -> dict[str, Path]:
        return {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}

    def entry(name: str, path: Path) -> dict[str, object]:
        data = path.read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's object id
        item: dict[str, object] = {"type": "file", "path": name, "size": len(data), "oid": blob}
        if len(data) >= LFS_FROM:
            item["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return item

    async def revision(request: Request) -> Response:
        siblings = [{"rfilename": name} for name in files()]
        return JSONResponse({"id": repo_id, "modelId": repo_id, "sha": COMMIT, "siblings": siblings, "private": False})

    async def tree(request: Request) -> Response:
        return JSONResponse([entry(name, path) for name, path in files().items()])

    async def resolve(request: Request) -> Response:
        path = files().get(request.path_params["path"])
        if path is None:
            return Response(status_code=404, headers={"X-Error-Code": "EntryNotFound"})
        item = entry(path.name, path)
        etag = item["lfs"]["oid"] if "lfs" in item else item["oid"]  # type: ignore[index]
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"', "Content-Length": str(item["size"])}
        if request.method == "HEAD":
            return Response(headers=headers)
        return FileResponse(path, headers=headers)

    base = f"/api/models/{repo_id}"
    return Starlette(
        routes=[
            Route(f"{base}/revision/{{rev}}", revision),
            Route(f"{base}/tree/{{rev}}", tree),
            Route(f"{base}/tree/{{rev}}/{{sub:path}}", tree),
            Route(f"/{repo_id}/resolve/{{rev}}/{{path:path}}", resolve, methods=["GET", "HEAD"]),
        ]
    )
