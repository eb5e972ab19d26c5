// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC1155Receiver {
    function onERC1155Received(address operator, address from, uint256 id, uint256 value, bytes calldata data) external returns (bytes4);
    function onERC1155BatchReceived(address operator, address from, uint256[] calldata ids, uint256[] calldata values, bytes calldata data)
        external
        returns (bytes4);
}

/// Minimal ERC-1155 for end-to-end tests. Anyone may mint.
contract TestMulti {
    mapping(uint256 => mapping(address => uint256)) private _balances;
    mapping(address => mapping(address => bool)) public isApprovedForAll;
    string private _uri;

    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0xd9b67a26 || interfaceId == 0x01ffc9a7; // ERC-1155, ERC-165
    }

    function balanceOf(address account, uint256 id) external view returns (uint256) {
        return _balances[id][account];
    }

    function balanceOfBatch(address[] calldata accounts, uint256[] calldata ids) external view returns (uint256[] memory balances) {
        require(accounts.length == ids.length, "ERC1155: length mismatch");
        balances = new uint256[](accounts.length);
        for (uint256 i = 0; i < accounts.length; i++) balances[i] = _balances[ids[i]][accounts[i]];
    }

    /// ERC-1155 metadata URI: one template for every id (clients replace {id}).
    function uri(uint256) external view returns (string memory) {
        return _uri;
    }

    function setURI(string calldata newUri) external {
        _uri = newUri;
    }

    function setApprovalForAll(address operator, bool approved) external {
        require(operator != msg.sender, "ERC1155: approval for self");
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function mint(address to, uint256 id, uint256 amount) external {
        require(to != address(0), "ERC1155: mint to the zero address");
        _balances[id][to] += amount;
        emit TransferSingle(msg.sender, address(0), to, id, amount);
        _checkSingle(address(0), to, id, amount, "");
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata amounts) external {
        require(to != address(0), "ERC1155: mint to the zero address");
        require(ids.length == amounts.length, "ERC1155: length mismatch");
        for (uint256 i = 0; i < ids.length; i++) _balances[ids[i]][to] += amounts[i];
        emit TransferBatch(msg.sender, address(0), to, ids, amounts);
        _checkBatch(address(0), to, ids, amounts, "");
    }

    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata data) external {
        _authorize(from, to);
        _move(from, to, id, value);
        emit TransferSingle(msg.sender, from, to, id, value);
        _checkSingle(from, to, id, value, data);
    }

    function safeBatchTransferFrom(address from, address to, uint256[] calldata ids, uint256[] calldata values, bytes calldata data)
        external
    {
        _authorize(from, to);
        require(ids.length == values.length, "ERC1155: length mismatch");
        for (uint256 i = 0; i < ids.length; i++) _move(from, to, ids[i], values[i]);
        emit TransferBatch(msg.sender, from, to, ids, values);
        _checkBatch(from, to, ids, values, data);
    }

    function _authorize(address from, address to) private view {
        require(to != address(0), "ERC1155: transfer to the zero address");
        require(from == msg.sender || isApprovedForAll[from][msg.sender], "ERC1155: not owner nor approved");
    }

    function _move(address from, address to, uint256 id, uint256 value) private {
        uint256 balance = _balances[id][from];
        require(balance >= value, "ERC1155: insufficient balance");
        unchecked {
            _balances[id][from] = balance - value;
        }
        _balances[id][to] += value;
    }

    // Receiver hooks run after the state change and event, as the standard requires, and only for contracts.
    function _checkSingle(address from, address to, uint256 id, uint256 value, bytes memory data) private {
        if (to.code.length == 0) return;
        require(
            IERC1155Receiver(to).onERC1155Received(msg.sender, from, id, value, data) == IERC1155Receiver.onERC1155Received.selector,
            "ERC1155: receiver rejected the tokens"
        );
    }

    function _checkBatch(address from, address to, uint256[] calldata ids, uint256[] calldata values, bytes memory data) private {
        if (to.code.length == 0) return;
        require(
            IERC1155Receiver(to).onERC1155BatchReceived(msg.sender, from, ids, values, data)
                == IERC1155Receiver.onERC1155BatchReceived.selector,
            "ERC1155: receiver rejected the tokens"
        );
    }
}
