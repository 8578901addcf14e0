-- Plain globals for the configuration tests.
function mark(name) end
function answer() end
