"""``DataError``: a data file that is corrupt, truncated or not what its loader expects."""
from ember.errors import EmberError


class DataError(EmberError, ValueError):
    """A data file (IDX, the shipped digits) that is corrupt, truncated or of the wrong kind; the
    message names the file and what was expected against what was found."""
