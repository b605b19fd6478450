"""A flask-smorest REST API whose views are also MCP tools (``ViewTools``).

Run it with::

    gunicorn -k gevent -b 127.0.0.1:8000 examples.smorest_app:app

The REST API is at ``/pets/`` (OpenAPI document at ``/openapi.json``) and the
same views are MCP tools at ``/mcp``:

- ``pets_pets_get`` (list, query arguments ``species`` and ``limit``) and
  ``pets_pets_post`` (create, a JSON ``body``; a taken name is a 422 from the
  view's own marshmallow validation);
- ``pets_petsbyid_get`` (404 for an unknown id) and ``pets_petsbyid_delete``,
  protected by the app's own ``@admin_required`` decorator: only a caller
  whose MCP request carries ``Authorization: Bearer <PETS_ADMIN_TOKEN>`` may
  delete;
- ``pets_photo`` (an ``image/png`` response, given as an image block);
- ``health``, a plain Flask view (URL variables and an optional body only).

``mcp`` and ``views`` live at module level and ``create_app()`` registers them
on each app it makes (the Flask-SQLAlchemy pattern): the tests make several
apps, and each app's tools run that app's views.

The pets live in this process's memory: run one worker.
"""

from __future__ import annotations

import functools
import os
import threading
import typing as t
import zlib

import marshmallow as ma
from flask import Flask
from flask import Response
from flask import jsonify
from flask import request
from flask.views import MethodView
from flask_smorest import Api
from flask_smorest import Blueprint
from flask_smorest import abort

from flask_mcp import MCP
from flask_mcp.contrib.view_tools import ViewTools

#: The token that lets a caller delete pets (the app's own auth, not MCP's).
ADMIN_TOKEN = os.environ.get("PETS_ADMIN_TOKEN", "admin-secret")

_lock = threading.Lock()
_pets: dict[int, dict[str, t.Any]] = {
    1: {"id": 1, "name": "Rex", "species": "dog"},
    2: {"id": 2, "name": "Tom", "species": "cat"},
}


def admin_required(view: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    """Refuse the request unless it carries the admin bearer token."""

    @functools.wraps(view)
    def wrapper(*args: t.Any, **kwargs: t.Any) -> t.Any:
        token = request.authorization.token if request.authorization else None
        if token is None:
            abort(401, message="Authentication required: send Authorization: Bearer <token>.")
        if token != ADMIN_TOKEN:
            abort(403, message="This token may not delete pets.")
        return view(*args, **kwargs)

    return wrapper


class PetSchema(ma.Schema):
    id = ma.fields.Integer(dump_only=True)
    name = ma.fields.String(required=True, validate=ma.validate.Length(min=1, max=40))
    species = ma.fields.String(required=True, validate=ma.validate.OneOf(["dog", "cat", "bird"]))

    @ma.validates("name")
    def unique_name(self, value: str, **kwargs: t.Any) -> None:
        """Refuse a name that another pet has (a check the JSON Schema cannot express)."""
        with _lock:
            if any(pet["name"].lower() == value.lower() for pet in _pets.values()):
                raise ma.ValidationError(f"A pet named {value!r} already exists.")


class PetQuerySchema(ma.Schema):
    species = ma.fields.String(validate=ma.validate.OneOf(["dog", "cat", "bird"]))
    limit = ma.fields.Integer(load_default=10, validate=ma.validate.Range(min=1, max=100))


blp = Blueprint("pets", __name__, url_prefix="/pets", description="Pets of the shop")


@blp.route("/")
class Pets(MethodView):
    @blp.arguments(PetQuerySchema, location="query")
    @blp.response(200, PetSchema(many=True))
    def get(self, query: dict[str, t.Any]) -> list[dict[str, t.Any]]:
        """List pets

        Pets in id order, optionally of one species.
        """
        with _lock:
            pets = [p for p in _pets.values() if query.get("species") in (None, p["species"])]
        return pets[: query["limit"]]

    @blp.arguments(PetSchema)
    @blp.response(201, PetSchema)
    def post(self, data: dict[str, t.Any]) -> dict[str, t.Any]:
        """Add a pet"""
        with _lock:
            pet = {"id": max(_pets, default=0) + 1, **data}
            _pets[pet["id"]] = pet
        return pet


@blp.route("/<int:pet_id>")
class PetsById(MethodView):
    @blp.response(200, PetSchema)
    def get(self, pet_id: int) -> dict[str, t.Any]:
        """Get a pet by id"""
        with _lock:
            pet = _pets.get(pet_id)
        if pet is None:
            abort(404, message=f"No pet has id {pet_id}.")
        return pet

    @admin_required
    @blp.response(204)
    def delete(self, pet_id: int) -> None:
        """Delete a pet (administrators only)"""
        with _lock:
            if _pets.pop(pet_id, None) is None:
                abort(404, message=f"No pet has id {pet_id}.")


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """Return a plain-colour PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    row = b"\x00" + bytes(rgb) * width
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


@blp.route("/<int:pet_id>/photo", endpoint="photo")
@blp.response(200, description="A PNG photo of the pet")
def photo(pet_id: int) -> Response:
    """A photo of a pet"""
    with _lock:
        pet = _pets.get(pet_id)
    if pet is None:
        abort(404, message=f"No pet has id {pet_id}.")
    colour = {"dog": (160, 110, 60), "cat": (90, 90, 90), "bird": (240, 200, 0)}[pet["species"]]
    return Response(_png(4, 4, colour), mimetype="image/png")


mcp = MCP(name="pets", version="1.0.0")
views = ViewTools(mcp)
# The pets blueprint and the app's health view; nothing else of the app becomes a tool.
views.add_routes(include=["pets", "health"])


def create_app() -> Flask:
    """Build the app: the REST API first, then its views as MCP tools."""
    app = Flask(__name__)
    app.config.update(
        API_TITLE="Pets",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        MCP_ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    )
    api = Api(app)
    api.register_blueprint(blp)

    @app.get("/health/<any(live, ready):probe>")
    def health(probe: str) -> t.Any:
        """Report whether the service is live or ready."""
        return jsonify({"probe": probe, "ok": True})

    mcp.init_app(app)
    views.init_app(app)
    return app


app = create_app()
