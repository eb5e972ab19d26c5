// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A view function that never returns: it burns all the gas its call is given (a hostile stream's trigger).
contract TestSpin {
    uint256 private seed = 1;

    function spin() external view returns (uint256 n) {
        while (seed != 0) {
            unchecked {
                n++;
            }
        }
    }
}
