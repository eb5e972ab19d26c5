// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Moves ether on with low-level calls, so transactions to it carry internal transactions.
contract Forwarder {
    event Forwarded(address indexed from, address indexed to, uint256 value);

    receive() external payable {}

    function forward(address payable to) external payable {
        _send(to, msg.value);
    }

    function split(address payable a, address payable b) external payable {
        uint256 half = msg.value / 2;
        _send(a, half);
        _send(b, msg.value - half); // b takes an odd wei, so nothing stays behind
    }

    function _send(address payable to, uint256 value) private {
        (bool ok,) = to.call{value: value}("");
        require(ok, "Forwarder: call failed");
        emit Forwarded(msg.sender, to, value);
    }
}
