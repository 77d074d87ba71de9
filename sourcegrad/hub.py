"""`sourcegrad.hub`: torch.hub by name, without downloads (sourcegrad fetches no models).

Importing it works (scripts import torch.hub at module level); every function raises
UnsupportedAPIError when called, and any other name when it is looked up (see
`sourcegrad.unsupported`): no stand-in that would return wrong data.
"""

from __future__ import annotations

from .unsupported import refused, refusing_getattr

__all__ = [
    "load",
    "list",
    "help",
    "load_state_dict_from_url",
    "download_url_to_file",
    "get_dir",
    "set_dir",
]

load = refused("torch.hub.load")
list = refused("torch.hub.list")
help = refused("torch.hub.help")
load_state_dict_from_url = refused("torch.hub.load_state_dict_from_url")
download_url_to_file = refused("torch.hub.download_url_to_file")
get_dir = refused("torch.hub.get_dir")
set_dir = refused("torch.hub.set_dir")

__getattr__ = refusing_getattr("torch.hub")
