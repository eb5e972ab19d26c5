// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Emits many logs in one transaction, for tests of log-query limits.
contract TestEmitter {
    event Ping(uint256 indexed i);

    function emitMany(uint256 n) external {
        for (uint256 i = 0; i < n; i++) emit Ping(i);
    }
}
