"""A pure description of the device mesh: dimension names and sizes, with or without processes.

Planning and `mmfreeze explain` use this instead of a live ``DeviceMesh`` so a plan can be made
offline from a recipe's dp / tp / cp sizes; at training time it is read from the real mesh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mmfreeze.exceptions import DistributedConfigError

if TYPE_CHECKING:
    from torch.distributed.device_mesh import DeviceMesh


@dataclass(frozen=True, kw_only=True)
class MeshDescription:
    """Named mesh dimensions and their sizes, outermost first."""

    dim_names: tuple[str, ...]
    sizes: tuple[int, ...]
    fsdp_dim: str = "dp"
    """The dimension FSDP shards parameters over."""

    def has(self, dim: str) -> bool:
        return dim in self.dim_names

    def describe(self) -> dict[str, Any]:
        return {"dims": dict(zip(self.dim_names, self.sizes)), "fsdp_dim": self.fsdp_dim}


def build_mesh_description(*, dp: int, tp: int = 1, cp: int = 1) -> MeshDescription:
    """The mesh a recipe's parallel sizes give: `dp` always, `cp` / `tp` only when larger than 1
    (a size-1 dimension is not created, so a policy that needs it must be rejected)."""
    sizes = {"dp": dp, "cp": cp, "tp": tp}
    for name, size in sizes.items():
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise DistributedConfigError(f"mesh size {name}={size!r} is not a positive integer")
    dims = [name for name, size in sizes.items() if name == "dp" or size > 1]
    return MeshDescription(dim_names=tuple(dims), sizes=tuple(sizes[name] for name in dims))


def get_mesh_description(mesh: DeviceMesh, *, fsdp_dim: str = "dp") -> MeshDescription:
    """Describe a live ``DeviceMesh`` (its names must include ``fsdp_dim``)."""
    names = tuple(mesh.mesh_dim_names or ())
    if fsdp_dim not in names:
        raise DistributedConfigError(
            f"the device mesh has dimensions {list(names)}; FSDP needs a dimension named {fsdp_dim!r}"
        )
    return MeshDescription(dim_names=names, sizes=tuple(mesh.mesh.shape), fsdp_dim=fsdp_dim)
